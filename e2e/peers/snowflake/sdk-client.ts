/**
 * TEST PEER ONLY. The real snowflake-sdk pointed at a Snowflake test peer, for the peer's tests
 * (loaded through loadSnowflakeSdk(), which turns the SDK's cloud platform detection off).
 */
import { loadSnowflakeSdk } from '../../../dataplane/src/drivers/snowflake/sdk.js';

export interface SdkConnectOptions {
  username?: string;
  password?: string;
  authenticator?: string;
  privateKey?: string;
  database?: string;
  schema?: string;
  warehouse?: string;
  role?: string;
}

/** The SDK's Connection, typed loosely: the tests use a handful of its methods. */
export interface SdkConnection {
  connect(cb: (err: SdkError | undefined, conn: SdkConnection) => void): void;
  execute(options: Record<string, unknown>): SdkStatement;
  destroy(cb: (err: SdkError | undefined) => void): void;
  getQueryStatus(queryId: string): Promise<string>;
  isStillRunning(status: string): boolean;
  getResultsFromQueryId(options: { queryId: string }): Promise<SdkStatement>;
  heartbeatAsync(): Promise<unknown>;
  isUp(): boolean;
}

export interface SdkStatement {
  getNumUpdatedRows(): number;
  getStatementTypeId?(): number;
  getColumns(): { getName(): string; getType(): string; getScale(): number }[];
  getQueryId(): string;
  streamRows(): NodeJS.ReadableStream;
}

export interface SdkError extends Error {
  code?: string;
  sqlState?: string;
}

export interface ExecResult {
  rows: Record<string, unknown>[];
  statement: SdkStatement;
}

export async function connectSdk(peer: { url: string; account: string }, options: SdkConnectOptions = {}): Promise<SdkConnection> {
  const sdk = await loadSnowflakeSdk();
  const connection = sdk.createConnection({
    account: peer.account,
    accessUrl: peer.url,
    username: options.username ?? 'das',
    ...(options.authenticator ? { authenticator: options.authenticator } : {}),
    ...(options.privateKey ? { privateKey: options.privateKey } : { password: options.password ?? 'das' }),
    ...(options.database ? { database: options.database } : {}),
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.warehouse ? { warehouse: options.warehouse } : {}),
    ...(options.role ? { role: options.role } : {}),
    // Fail fast in tests: no login retries against a peer that said no.
    sfRetryMaxLoginRetries: 0,
  } as never) as unknown as SdkConnection;
  return new Promise((resolve, reject) => connection.connect((err, conn) => (err ? reject(err) : resolve(conn))));
}

export function exec(connection: SdkConnection, sqlText: string, binds?: unknown[], extra: Record<string, unknown> = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    connection.execute({
      sqlText,
      ...(binds ? { binds } : {}),
      ...extra,
      complete: (err: SdkError | undefined, statement: SdkStatement, rows: Record<string, unknown>[]) => (err ? reject(err) : resolve({ rows: rows ?? [], statement })),
    });
  });
}

/** The error a statement fails with (rejects if it succeeds). */
export async function execError(connection: SdkConnection, sqlText: string, binds?: unknown[]): Promise<SdkError> {
  try {
    await exec(connection, sqlText, binds);
  } catch (err) {
    return err as SdkError;
  }
  throw new Error(`expected ${sqlText} to fail`);
}

export function destroy(connection: SdkConnection): Promise<void> {
  return new Promise((resolve, reject) => connection.destroy((err) => (err ? reject(err) : resolve())));
}
