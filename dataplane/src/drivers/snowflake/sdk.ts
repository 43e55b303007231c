/**
 * The one place snowflake-sdk is loaded. Loading it runs the SDK's platform detection, which
 * probes cloud metadata addresses (169.254.169.254, metadata.google.internal) and AWS STS at
 * import time; the data plane has no use for that, and tests must not leave the machine. So the
 * variable that turns it off is set before a dynamic import, here, and nothing else imports the
 * package (model/layering.test.ts keeps it so).
 */
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
    return sdk;
  })();
  return loading;
}
