/**
 * TEST PEER ONLY — never shipped. A stand-in for Snowflake's service that the real snowflake-sdk
 * can talk to: an HTTP server on 127.0.0.1 speaking the SDK's endpoints, backed by a real
 * PostgreSQL (one database per Snowflake database). See README.md beside this file for what it
 * speaks, what it refuses and what it does not emulate.
 *
 *   const peer = await startSnowflakeTestPeer({ adminUrl });
 *   sdk.createConnection({ account: peer.account, accessUrl: peer.url, username: 'das', password: 'das', … })
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { PeerUsers } from './auth.js';
import { PeerCatalog } from './catalog.js';
import { SnowflakeSqlError } from './errors.js';
import { RESULT_PARAMETERS } from './results.js';
import { createPeerServer } from './server.js';
import { PeerStage, type UploadOutcome } from './stage.js';
import { errorBody, Session, type QueryLogEntry, type QueryRequest, type ResponseBody } from './sessions.js';
import { foldName } from './translate.js';

export interface SnowflakeTestPeerOptions {
  /** PostgreSQL superuser URL: the peer creates one PostgreSQL database per Snowflake database. */
  adminUrl: string;
  /** Port on 127.0.0.1 (default: a free one). */
  port?: number;
  /** Roles that may only read (besides any role whose name ends in READONLY). Default SERVICE_READONLY. */
  readOnlyRoles?: string[];
  /** Account name reported (the SDK's `account` option). Default TESTPEER. */
  account?: string;
  /** Session token lifetime, to test renewal. Default 3600 s. */
  sessionTokenValiditySeconds?: number;
  /** Defaults for a login that names none. */
  defaultDatabase?: string;
  defaultRole?: string;
}

export interface IcebergRecord {
  schema: string;
  table: string;
  externalVolume: string | null;
  catalog: string | null;
  baseLocation: string | null;
}

interface TokenEntry {
  session: Session;
  expiresAt: number;
}

interface StoredQuery {
  status: 'RUNNING' | 'SUCCESS' | 'FAILED_WITH_ERROR';
  done: Promise<ResponseBody>;
  body?: ResponseBody;
}

const MAX_STORED_QUERIES = 1000;

const invalidToken = (): ResponseBody => ({ success: false, code: '390104', message: 'Session token invalid or expired. Log in again.', data: { nextAction: 'RETRY_LOGIN' } });

export class SnowflakeTestPeer {
  readonly account: string;
  readonly users = new PeerUsers();
  private readonly catalog: PeerCatalog;
  private readonly readOnlyRoles: Set<string>;
  private readonly sessionTokens = new Map<string, TokenEntry>();
  private readonly masterTokens = new Map<string, Session>();
  private readonly sessions = new Set<Session>();
  private readonly stored = new Map<string, StoredQuery>();
  private readonly log: QueryLogEntry[] = [];
  private readonly warehouseNames = new Set<string>();
  /** The user stages (@~) PUT writes and COPY INTO reads: in memory, dropped on stop. */
  readonly stage = new PeerStage();
  private nextSessionId = 1;
  /** How many session tokens were renewed with a master token (tests of renewal read it). */
  renewals = 0;
  private server = createPeerServer(this);
  url = '';
  host = '127.0.0.1';
  port = 0;

  constructor(private readonly options: SnowflakeTestPeerOptions) {
    this.account = (options.account ?? 'TESTPEER').toUpperCase();
    this.readOnlyRoles = new Set((options.readOnlyRoles ?? ['SERVICE_READONLY']).map((r) => foldName(r)));
    this.catalog = new PeerCatalog(options.adminUrl, (role) => this.isReadOnlyRole(role));
    this.users.setPassword('das', 'das');
  }

  isReadOnlyRole(role: string): boolean {
    return this.readOnlyRoles.has(role) || role.toUpperCase().endsWith('READONLY');
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  queries(): QueryLogEntry[] {
    return this.log.map((e) => ({ ...e }));
  }

  clearQueries(): void {
    this.warehouses(); // keep the warehouse names the cleared entries held
    this.log.length = 0;
  }

  /** Every warehouse named at login or in force for a statement (USE WAREHOUSE included). */
  warehouses(): string[] {
    for (const entry of this.log) if (entry.warehouse) this.warehouseNames.add(entry.warehouse);
    return [...this.warehouseNames];
  }

  registerPublicKey(user: string, pem: string): void {
    this.users.registerPublicKey(user, pem);
  }

  /** The Iceberg settings recorded for the tables of one Snowflake database. */
  async icebergTables(database: string): Promise<IcebergRecord[]> {
    const session = new Session(0, 'peer', { database: foldName(database), schema: 'PUBLIC', warehouse: null, role: 'SYSADMIN' }, this.options.adminUrl, this.catalog, () => false, () => undefined);
    await session.open();
    try {
      return await session.rawQuery<IcebergRecord>(
        'SELECT table_schema AS schema, table_name AS "table", external_volume AS "externalVolume", catalog, base_location AS "baseLocation" FROM sf_peer.iceberg_tables ORDER BY 1, 2',
      );
    } finally {
      await session.close();
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    await Promise.all([...this.sessions].map((s) => s.close(true)));
    this.sessions.clear();
    this.stage.clear();
  }

  // --- routes (server.ts) ------------------------------------------------------------------

  private issueTokens(session: Session): Record<string, unknown> {
    const validity = this.options.sessionTokenValiditySeconds ?? 3600;
    const token = `peer-session-${randomBytes(16).toString('hex')}`;
    const masterToken = `peer-master-${randomBytes(16).toString('hex')}`;
    this.sessionTokens.set(token, { session, expiresAt: Date.now() + validity * 1000 });
    this.masterTokens.set(masterToken, session);
    return { token, sessionToken: token, masterToken, validityInSeconds: validity, masterValidityInSeconds: 14400 };
  }

  private sessionFor(authorization: string | undefined): Session | ResponseBody {
    const token = /Snowflake Token="([^"]*)"/.exec(authorization ?? '')?.[1];
    const entry = token ? this.sessionTokens.get(token) : undefined;
    if (!entry) return invalidToken();
    if (entry.expiresAt < Date.now()) return { success: false, code: '390112', message: 'Your session has expired. Please login again.', data: null as never };
    return entry.session;
  }

  async login(body: Record<string, unknown>, query: URLSearchParams): Promise<ResponseBody> {
    const data = (body.data ?? {}) as Record<string, unknown>;
    const user = String(data.LOGIN_NAME ?? '');
    const check = this.users.check({
      account: String(data.ACCOUNT_NAME ?? this.account),
      user,
      authenticator: String(data.AUTHENTICATOR ?? 'SNOWFLAKE'),
      password: data.PASSWORD === undefined ? undefined : String(data.PASSWORD),
      token: data.TOKEN === undefined ? undefined : String(data.TOKEN),
    });
    if (!check.ok) return { success: false, code: check.code, message: check.message, data: { nextAction: 'RETRY_LOGIN', authnMethod: 'USERNAME_PASSWORD' } };
    const warehouse = query.get('warehouse');
    const context = {
      database: foldName(query.get('databaseName') ?? this.options.defaultDatabase ?? 'PEER'),
      schema: foldName(query.get('schemaName') ?? 'PUBLIC'),
      warehouse: warehouse ? foldName(warehouse) : null,
      role: foldName(query.get('roleName') ?? this.options.defaultRole ?? 'SYSADMIN'),
    };
    const session = new Session(this.nextSessionId++, user.toUpperCase(), context, this.options.adminUrl, this.catalog, (r) => this.isReadOnlyRole(r), (e) => this.record(e), {
      stage: this.stage,
      endPoint: () => this.url,
    });
    try {
      await session.open();
    } catch (err) {
      await session.close();
      return errorBody(new SnowflakeSqlError('390201', '08004', `The requested database, schema, role or warehouse cannot be used: ${(err as Error).message}`));
    }
    const sessionParameters = (data.SESSION_PARAMETERS ?? {}) as Record<string, unknown>;
    if (sessionParameters.QUERY_TAG !== undefined) session.params.QUERY_TAG = String(sessionParameters.QUERY_TAG);
    this.sessions.add(session);
    if (context.warehouse) this.warehouseNames.add(context.warehouse);
    return {
      success: true,
      code: null,
      message: null,
      data: {
        ...this.issueTokens(session),
        sessionId: session.id,
        parameters: [...RESULT_PARAMETERS, { name: 'CLIENT_SESSION_KEEP_ALIVE', value: false }],
        sessionInfo: { databaseName: context.database, schemaName: context.schema, warehouseName: context.warehouse, roleName: context.role },
        idToken: null,
        mfaToken: null,
        displayUserName: user.toUpperCase(),
        serverVersion: 'snowflake-test-peer',
        firstLogin: false,
        healthCheckInterval: 45,
      },
    };
  }

  async renew(authorization: string | undefined, body: Record<string, unknown>): Promise<ResponseBody> {
    const master = /Snowflake Token="([^"]*)"/.exec(authorization ?? '')?.[1];
    const session = master ? this.masterTokens.get(master) : undefined;
    if (!session) return { success: false, code: '390114', message: 'Authentication token has expired. The user must authenticate again.', data: null as never };
    const old = typeof body.oldSessionToken === 'string' ? body.oldSessionToken : undefined;
    if (old) this.sessionTokens.delete(old);
    this.masterTokens.delete(master!);
    this.renewals++;
    return { success: true, code: null, message: null, data: this.issueTokens(session) };
  }

  async heartbeat(authorization: string | undefined): Promise<ResponseBody> {
    const session = this.sessionFor(authorization);
    if (!(session instanceof Session)) return session;
    return { success: true, code: null, message: null, data: {} };
  }

  async logout(authorization: string | undefined): Promise<ResponseBody> {
    const session = this.sessionFor(authorization);
    if (!(session instanceof Session)) return session;
    for (const [token, entry] of this.sessionTokens) if (entry.session === session) this.sessionTokens.delete(token);
    for (const [token, s] of this.masterTokens) if (s === session) this.masterTokens.delete(token);
    this.sessions.delete(session);
    await session.close();
    return { success: true, code: null, message: null, data: null as never };
  }

  async query(authorization: string | undefined, body: Record<string, unknown>): Promise<ResponseBody> {
    const session = this.sessionFor(authorization);
    if (!(session instanceof Session)) return session;
    if (typeof body.sqlText !== 'string') return errorBody(SnowflakeSqlError.syntax('request body ($.sqlText): expected the SQL text as a string.'));
    const request = body as unknown as QueryRequest;
    const { queryId, done } = session.submit(request, randomUUID());
    const stored: StoredQuery = { status: 'RUNNING', done };
    this.store(queryId, stored);
    void done.then((b) => {
      stored.body = b;
      stored.status = b.success ? 'SUCCESS' : 'FAILED_WITH_ERROR';
    });
    if (request.asyncExec === true) {
      return {
        success: true,
        code: '333334',
        message: 'Asynchronous execution in progress. Use provided query id to perform query monitoring and management.',
        data: { queryId, getResultUrl: `/queries/${queryId}/result` },
      };
    }
    return done;
  }

  async result(authorization: string | undefined, queryId: string): Promise<ResponseBody> {
    const session = this.sessionFor(authorization);
    if (!(session instanceof Session)) return session;
    const stored = this.stored.get(queryId);
    if (!stored) return errorBody(new SnowflakeSqlError('000709', '02000', `Statement ${queryId} not found`), queryId);
    return stored.done;
  }

  async monitoring(authorization: string | undefined, queryId: string): Promise<ResponseBody> {
    const session = this.sessionFor(authorization);
    if (!(session instanceof Session)) return session;
    const stored = this.stored.get(queryId);
    if (!stored) return { success: true, code: null, message: null, data: { queries: [] } };
    const failed = stored.status === 'FAILED_WITH_ERROR' ? stored.body : undefined;
    return {
      success: true,
      code: failed?.code ?? null,
      message: failed ? '' : null,
      data: {
        queries: [{ id: queryId, status: stored.status, ...(failed ? { errorCode: failed.code, errorMessage: failed.message } : {}) }],
        ...(failed ? { sqlState: failed.data.sqlState } : {}),
      },
    };
  }

  stageUpload(authorization: string | undefined, grant: string, fileName: string, body: Buffer): UploadOutcome {
    return this.stage.upload(authorization, grant, fileName, body);
  }

  stageHead(authorization: string | undefined, grant: string, fileName: string): UploadOutcome & { size?: number } {
    return this.stage.head(authorization, grant, fileName);
  }

  private store(queryId: string, stored: StoredQuery): void {
    this.stored.set(queryId, stored);
    if (this.stored.size > MAX_STORED_QUERIES) this.stored.delete(this.stored.keys().next().value!);
  }

  private record(entry: QueryLogEntry): void {
    this.log.push(entry);
  }
}

export interface SnowflakeTestPeerHandle {
  url: string;
  host: string;
  port: number;
  account: string;
  queries(): QueryLogEntry[];
  clearQueries(): void;
  warehouses(): string[];
  registerPublicKey(user: string, pem: string): void;
  icebergTables(database: string): Promise<IcebergRecord[]>;
  /** The paths below @~ staged for a user (default: every user): what PUT left and COPY INTO … PURGE did not remove. */
  stagedFiles(user?: string): string[];
  stop(): Promise<void>;
  peer: SnowflakeTestPeer;
}

export async function startSnowflakeTestPeer(options: SnowflakeTestPeerOptions): Promise<SnowflakeTestPeerHandle> {
  const peer = new SnowflakeTestPeer(options);
  await peer.listen();
  return {
    url: peer.url,
    host: peer.host,
    port: peer.port,
    account: peer.account,
    queries: () => peer.queries(),
    clearQueries: () => peer.clearQueries(),
    warehouses: () => peer.warehouses(),
    registerPublicKey: (user, pem) => peer.registerPublicKey(user, pem),
    icebergTables: (database) => peer.icebergTables(database),
    stagedFiles: (user) => peer.stage.list(user?.toUpperCase()),
    stop: () => peer.stop(),
    peer,
  };
}

export type { QueryLogEntry } from './sessions.js';
