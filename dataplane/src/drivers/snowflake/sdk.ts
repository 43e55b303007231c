/**
 * The one place snowflake-sdk is loaded. Loading it runs the SDK's platform detection, which
 * probes cloud metadata addresses (169.254.169.254, metadata.google.internal) and AWS STS at
 * import time; the data plane has no use for that, and tests must not leave the machine. So the
 * variable that turns it off is set before a dynamic import, here, and nothing else imports the
 * package (model/layering.test.ts keeps it so). The SDK reads it from the process environment
 * itself, so this is the data plane's one write to it (declared with the settings, reader `library`).
 */
import { createRequire } from 'node:module';
import type * as SnowflakeSdk from 'snowflake-sdk';

export type Snowflake = typeof SnowflakeSdk;
/** The SDK's types for the driver's modules (which may not import the package themselves). */
export type SnowflakeConnection = SnowflakeSdk.Connection;
export type SnowflakeConnectionOptions = SnowflakeSdk.ConnectionOptions;
export type SnowflakeStatement = SnowflakeSdk.RowStatement;
export type SnowflakeColumn = SnowflakeSdk.Column;

let loading: Promise<Snowflake> | undefined;

export function loadSnowflakeSdk(): Promise<Snowflake> {
  loading ??= (async () => {
    process.env.SNOWFLAKE_DISABLE_PLATFORM_DETECTION = 'true';
    const mod = (await import('snowflake-sdk')) as Snowflake & { default?: Snowflake };
    const sdk = mod.default ?? mod;
    // The SDK's own logger writes to a file in the working directory by default; errors reach
    // the data plane as rejected calls, which it logs itself.
    sdk.configure({ logLevel: 'OFF' as never, additionalLogToConsole: false });
    boundStatementRetries();
    return sdk;
  })();
  return loading;
}

/** How often a request that met a network error is sent again, and the longest pause between tries (s). */
export const REQUEST_RETRIES = 2;
export const REQUEST_RETRY_MIN_SLEEP_S = 0.25;
export const REQUEST_RETRY_MAX_SLEEP_S = 1;

interface RetryingRequest {
  useSnowflakeRetryMiddleware?: boolean;
  snowflakeRetryConfig?: Record<string, unknown>;
}

/**
 * The SDK sends a statement request again after a network error up to 7 times, pausing up to 16 s
 * between tries (its own default, which no connection option reaches): a warehouse that is down
 * would hold each request for over a minute. A store that is down must be a 503 in seconds, so a
 * request interceptor on the SDK's own axios instance (the same module the SDK uses) bounds the
 * retries before the SDK's retry middleware reads them — axios runs request interceptors added
 * later first. Logins have their own option (sfRetryMaxLoginRetries), set by sessions.ts.
 */
function boundStatementRetries(): void {
  const require = createRequire(import.meta.url);
  const { default: axios } = require('snowflake-sdk/dist/lib/http/axios_instance.js') as {
    default: { interceptors: { request: { use(fn: (config: RetryingRequest) => RetryingRequest): void } } };
  };
  axios.interceptors.request.use((config) => {
    if (config.useSnowflakeRetryMiddleware) config.snowflakeRetryConfig = { ...config.snowflakeRetryConfig, maxRetries: REQUEST_RETRIES, sleepBase: REQUEST_RETRY_MIN_SLEEP_S, sleepCap: REQUEST_RETRY_MAX_SLEEP_S };
    return config;
  });
}
