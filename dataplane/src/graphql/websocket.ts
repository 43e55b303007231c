/**
 * The WebSocket gateway: `/{dataset}/graphql` (or `/graphql` on a dataset host label) upgraded on
 * both gateways after the same firewall, addressing and authentication as REST. Credentials come in
 * the upgrade's Authorization header or in `connection_init`'s payload (`{"Authorization": "…"}`;
 * browsers cannot set headers on a WebSocket). The protocol is chosen by Sec-WebSocket-Protocol:
 * `graphql-transport-ws` (the graphql-ws package's server; also when none is offered) or the older
 * `graphql-ws` of subscriptions-transport-ws (legacy-protocol.ts).
 *
 * A connection ends with 4403 when its token expires or a config change withdraws its access, and
 * with 4429 when it does not keep up with its events (dispatcher.ts) or holds more unsent bytes
 * than its budget (send-budget.ts). Per replica, connections are capped, those without verified
 * credentials separately and lower; past a cap the upgrade is refused with 503 before it happens.
 * Both protocols plug into one binding to `ws` (ws-binding.ts: errors, size limit, keep-alive,
 * back-pressure, closing); a frame `ws` refuses (too large, invalid UTF-8, a bad opcode) ends that
 * one connection with ws's close code (1009, 1007, 1002), not the process.
 */
import { upgradeAnswered } from '../telemetry/http.js';
import { DATAPLANE_DEFAULTS } from '../../../model/settings/dataplane.js';
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError } from 'graphql';
import { makeServer, CloseCode, DEPRECATED_GRAPHQL_WS_PROTOCOL, GRAPHQL_TRANSPORT_WS_PROTOCOL } from 'graphql-ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import type { RecordEngine } from '../engine/engine.js';
import { ApiError } from '../engine/errors.js';
import type { Authenticate, NodeMiddleware } from '../front-door/authenticate.js';
import { AddressingError, inferAuthkind, resolveGateway, type Authkind } from '../front-door/gateway.js';
import { logRefusal, upgradeRequestId } from './refusals.js';
import { toApiError } from '../front-door/errors.js';
import type { ChangeDispatcher } from './dispatcher.js';
import { serveLegacyProtocol } from './legacy-protocol.js';
import { subscribeShared } from './shared-execution.js';
import { executeOperation } from './operation.js';
import { DEFAULT_QUERY_LIMITS, prepareOperation, type QueryLimits } from './limits.js';
import { SendBudget, SLOW_CONSUMER } from './send-budget.js';
import { bindSocket } from './ws-binding.js';
import { datasetSchema, graphqlErrorOf, type GraphQLContext, type SubscriptionRequest } from './schema.js';

export const TRANSPORT_WS = GRAPHQL_TRANSPORT_WS_PROTOCOL;
/** The older protocol of subscriptions-transport-ws, which took the name graphql-ws. */
export const LEGACY_WS = DEPRECATED_GRAPHQL_WS_PROTOCOL;
/** WebSocket close code 1012, "service restart": the replica stops; resume elsewhere from the last cursor. */
export const SERVICE_RESTART = 1012;

export interface SubscriptionLimits {
  /** Subscriptions one connection may hold at once. */
  perConnection: number;
  /** Time a client has to send connection_init. */
  initTimeoutMs: number;
  /** Interval of keep-alives (pings; `ka` on the older protocol). */
  keepAliveMs: number;
  /** WebSocket connections on this replica, all datasets together (derived from the memory limit: memory-caps.ts). */
  maxConnections: number;
  /** Of those, connections whose credentials are not verified yet (no Authorization at the upgrade, no connection_init yet). */
  maxUnauthenticated: number;
  /** Bytes one connection may hold for its client: events queued plus bytes sent and not yet taken by the socket. */
  maxBufferedBytes: number;
  /** How long a close frame may take to go out before the socket is destroyed. */
  closeGraceMs: number;
  /** Largest message a client may send. */
  maxMessageBytes: number;
  /** How often a verified ServiceAccount caller is authenticated again (a revoked one is then ended, 4403). */
  reverifyMs: number;
}

/** The defaults (README "Process environment"); settings.ts reads the overrides, and so may a memory-based sizing. */
export const DEFAULT_LIMITS: SubscriptionLimits = {
  perConnection: DATAPLANE_DEFAULTS.DAS_SUBSCRIPTIONS_PER_CONNECTION,
  initTimeoutMs: DATAPLANE_DEFAULTS.DAS_SUBSCRIPTION_INIT_TIMEOUT_MS,
  keepAliveMs: DATAPLANE_DEFAULTS.DAS_SUBSCRIPTION_KEEPALIVE_MS,
  // Without a memory limit and without DAS_WS_MAX_CONNECTIONS.
  maxConnections: 5_000,
  maxUnauthenticated: DATAPLANE_DEFAULTS.DAS_WS_MAX_UNAUTHENTICATED,
  maxBufferedBytes: DATAPLANE_DEFAULTS.DAS_WS_MAX_BUFFERED_BYTES,
  closeGraceMs: DATAPLANE_DEFAULTS.DAS_WS_CLOSE_GRACE_MS,
  maxMessageBytes: DATAPLANE_DEFAULTS.DAS_WS_MAX_MESSAGE_BYTES,
  reverifyMs: DATAPLANE_DEFAULTS.DAS_SUBSCRIPTION_REVERIFY_MS,
};

export interface SubscriptionServerDeps {
  store: ConfigStore;
  engine: RecordEngine;
  dispatcher: ChangeDispatcher;
  authenticate: Authenticate;
  firewall?: NodeMiddleware;
  logger: Logger;
  limits?: Partial<SubscriptionLimits>;
  queryLimits?: QueryLimits;
}

/** One client connection: which dataset, through which gateway, as whom. */
export interface Connection {
  datasetId: string;
  dataset: DatasetConfig;
  /** Set by the upgrade's Authorization header, else by connection_init. */
  authorization?: string;
  /** The TCP peer's address at the upgrade (trust verified: whether a Proxy assertion is believed). */
  remoteAddress?: string;
  authkind: Authkind;
  /** Whether the gateway came from the host (then the credential's scheme does not choose it). */
  byHost: boolean;
  caller?: Caller;
  socket: WebSocket;
  /** The upgrade request's id, in the log lines about this connection. */
  requestId: string;
  /** Its bytes waiting for the client (send-budget.ts). */
  budget: SendBudget;
  /** Sends one message within the budget (over it: 4429). */
  send(data: string): Promise<void>;
  /** Ends the connection (4403, 4429…); destroys the socket if the close frame does not go out. */
  close(code: number, reason: string): void;
  expiry?: NodeJS.Timeout;
}

export class SubscriptionServer {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<Connection>();
  /** Connections without verified credentials yet. */
  private readonly unverified = new Set<Connection>();
  /** Upgrades being checked (firewall, authentication): counted against the caps too. */
  private upgrading = 0;
  private readonly limits: SubscriptionLimits;
  private readonly queryLimits: QueryLimits;
  private readonly onDataset = (id: string) => void this.recheck((c) => c.datasetId === id);
  private readonly onEnvironment = () => void this.recheck(() => true);

  constructor(private readonly deps: SubscriptionServerDeps) {
    this.limits = { ...DEFAULT_LIMITS, ...deps.limits };
    this.queryLimits = deps.queryLimits ?? DEFAULT_QUERY_LIMITS;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: this.limits.maxMessageBytes });
    deps.store.on('dataset', this.onDataset);
    deps.store.on('environment', this.onEnvironment);
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Connections whose credentials are not verified yet. */
  get unauthenticatedCount(): number {
    return this.unverified.size;
  }

  /** The WebSockets open now (for checks that every one is looked after). */
  get sockets(): WebSocket[] {
    return [...this.connections].map((c) => c.socket);
  }

  /** The server's `upgrade` event. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Node removed its own listener when it handed the socket over: a reset now must not end the process.
    socket.on('error', () => undefined);
    const res = new ServerResponse(req);
    res.assignSocket(socket as import('node:net').Socket);
    res.on('finish', () => {
      upgradeAnswered(req, res.statusCode);
      socket.destroy();
    });
    // One id for the upgrade: in its refusal's answer and log line, and the firewall's.
    const reqId = upgradeRequestId(req.headers['x-request-id']);
    (req as IncomingMessage & { id?: string }).id = reqId;
    const refused = (err: unknown) => refuse(res, err, this.deps.logger, { reqId, authorization: req.headers.authorization });
    const full = this.overCap(req);
    if (full) return refused(full);
    this.upgrading++;
    let counted = true;
    const done = () => {
      if (counted) this.upgrading--;
      counted = false;
    };
    res.once('close', done);
    const proceed = () =>
      this.upgrade(req, socket, head, res, reqId)
        .catch(refused)
        .finally(done);
    if (!this.deps.firewall) return void proceed();
    // A request the firewall blocks gets its answer on this socket and never upgrades.
    this.deps.firewall(req, res, (err?: unknown) => (err ? refused(err) : void proceed()));
  }

  /** A 503 when this replica holds as many connections as it may (those being upgraded included). */
  private overCap(req: IncomingMessage): ApiError | undefined {
    const total = this.connections.size + this.upgrading;
    if (total >= this.limits.maxConnections) {
      return new ApiError(503, 'TOO_MANY_CONNECTIONS', `this replica serves at most ${this.limits.maxConnections} WebSocket connections; retry later or on another replica`, [], 5);
    }
    // The subscription cap (memory-caps.ts) refuses here too, before anything is allocated, so the autoscaler or another replica takes the load, not the OOM killer.
    const maxSubscriptions = this.deps.dispatcher.maxSubscriptions;
    if (this.deps.dispatcher.open >= maxSubscriptions) {
      return new ApiError(503, 'TOO_MANY_CONNECTIONS', `this replica serves at most ${maxSubscriptions} subscriptions; retry later or on another replica`, [], 5);
    }
    // Without an Authorization header the connection stays unverified until connection_init.
    if (!req.headers.authorization && this.unverified.size + this.upgrading >= this.limits.maxUnauthenticated) {
      return new ApiError(503, 'TOO_MANY_CONNECTIONS', `this replica holds at most ${this.limits.maxUnauthenticated} WebSocket connections that have not authenticated yet; send credentials in the upgrade's Authorization header or retry later`, [], 5);
    }
    return undefined;
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, res: ServerResponse, requestId: string): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    let route;
    try {
      route = resolveGateway(req.headers.host, path, req.headers.authorization);
    } catch (err) {
      if (err instanceof AddressingError) throw new ApiError(400, 'INVALID_PATH', err.message);
      throw err;
    }
    if (!route.datasetId || route.rest.length !== 1 || route.rest[0] !== 'graphql') throw new ApiError(404, 'NOT_FOUND', 'WebSocket subscriptions are served at /{dataset}/graphql');
    const protocol = chooseProtocol(req.headers['sec-websocket-protocol']);
    if (!protocol) throw new ApiError(400, 'UNSUPPORTED_PROTOCOL', `offer the WebSocket subprotocol ${TRANSPORT_WS} or ${LEGACY_WS}`);
    const env = this.environment();
    const dataset = this.deps.engine.dataset(route.datasetId);
    let caller: Caller | undefined;
    const remoteAddress = req.socket.remoteAddress;
    if (req.headers.authorization) caller = await this.authenticate({ authkind: route.authkind, authorization: req.headers.authorization, remoteAddress }, env, dataset);
    res.detachSocket(socket as import('node:net').Socket);
    res.removeAllListeners('finish');
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      upgradeAnswered(req, 101);
      const bound = bindSocket(ws, this.limits, { logger: this.deps.logger, onSlowConsumer: () => this.deps.dispatcher.countSlowConnection() });
      const connection: Connection = {
        datasetId: route.datasetId!,
        dataset,
        authorization: req.headers.authorization,
        remoteAddress,
        authkind: route.authkind,
        byHost: route.by === 'host',
        caller,
        socket: ws,
        requestId,
        budget: bound.budget,
        send: bound.send,
        close: bound.close,
      };
      this.connections.add(connection);
      if (!caller) this.unverified.add(connection);
      ws.once('close', () => {
        this.connections.delete(connection);
        this.unverified.delete(connection);
        if (connection.expiry) clearTimeout(connection.expiry);
      });
      if (caller) this.watchExpiry(connection);
      const session = this.session(connection);
      bound.serve(protocol, protocol === LEGACY_WS ? (socket) => serveLegacyProtocol(socket, session, this.limits) : (socket) => this.transportWs(connection, session).opened(socket, { connection }));
    });
  }

  /** Authentication as REST's; its refusals as ApiErrors (401, 403). */
  private async authenticate(...args: Parameters<Authenticate>): Promise<Caller> {
    try {
      return await this.deps.authenticate(...args);
    } catch (err) {
      throw toApiError(err) ?? err;
    }
  }

  private environment(): EnvironmentConfig {
    const env = this.deps.store.environment;
    if (!env) throw new ApiError(503, 'NOT_READY', 'the data plane has no environment config yet');
    return env;
  }

  /** What both protocols need from the server: authentication at init, and the operation context. */
  session(connection: Connection): Session {
    return {
      init: async (payload) => {
        if (!connection.caller) {
          const given = initAuthorization(payload);
          if (given !== undefined) connection.authorization = given;
          if (!connection.byHost) connection.authkind = inferAuthkind(connection.authorization);
          try {
            connection.caller = await this.authenticate({ authkind: connection.authkind, authorization: connection.authorization, remoteAddress: connection.remoteAddress }, this.environment(), connection.dataset);
          } catch (err) {
            const e = err instanceof ApiError ? err : undefined;
            const closeCode = e?.status === 401 ? CloseCode.Unauthorized : CloseCode.Forbidden;
            logRefusal(this.deps.logger, { reqId: connection.requestId, closeCode, code: e?.code, reason: e?.message ?? 'forbidden', authorization: connection.authorization, dataset: connection.datasetId, gateway: connection.authkind });
            throw err;
          }
          this.unverified.delete(connection);
          this.watchExpiry(connection);
        }
      },
      context: (): GraphQLContext => ({
        engine: this.deps.engine,
        dataset: connection.dataset,
        subscribe: (request: SubscriptionRequest) => this.deps.dispatcher.subscribe(connection.dataset, request, () => connection.close(SLOW_CONSUMER.code, SLOW_CONSUMER.reason), connection.budget),
      }),
      schema: () => datasetSchema(connection.dataset),
      prepare: (query, variables, operationName) => prepareOperation(datasetSchema(connection.dataset), query, variables, this.queryLimits, operationName),
    };
  }

  /** graphql-transport-ws: graphql-ws's own server, with this server's authentication, limits and execution. */
  private transportWs(connection: Connection, session: Session) {
    return makeServer<Record<string, unknown> | undefined, { connection: Connection }>({
      schema: () => session.schema(),
      context: () => session.context() as unknown as Record<string, unknown>,
      connectionInitWaitTimeout: this.limits.initTimeoutMs,
      subscribe: (args) => subscribeShared(args),
      execute: (args) => executeOperation(args),
      onConnect: async (ctx) => {
        try {
          await session.init(ctx.connectionParams);
          return true;
        } catch (err) {
          const e = err instanceof ApiError ? err : undefined;
          connection.close(e?.status === 401 ? CloseCode.Unauthorized : CloseCode.Forbidden, closeReason(e?.message ?? 'forbidden'));
          return false;
        }
      },
      onSubscribe: (ctx, _id, payload) => {
        // The subscription being opened is already registered: more than the limit is refused.
        if (Object.keys(ctx.subscriptions).length > this.limits.perConnection) {
          return [new GraphQLError(`at most ${this.limits.perConnection} subscriptions per connection`, { extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } })];
        }
        // The one parser and validation of every transport (limits.ts), instead of graphql-ws's own.
        const prepared = session.prepare(payload.query, payload.variables, payload.operationName);
        if (prepared.errors) return prepared.errors;
        return { schema: session.schema(), document: prepared.document, operationName: payload.operationName, variableValues: payload.variables };
      },
    });
  }

  /**
   * Ends the connection when the caller's token expires (4403). A verified ServiceAccount caller
   * (iam with an expiry) is authenticated again every reverifyMs meanwhile, so a revoked one ends
   * too; the API server being unreachable then is no reason to end it.
   */
  private watchExpiry(connection: Connection): void {
    const exp = connection.caller?.claims.exp;
    if (typeof exp !== 'number') return;
    const ms = exp * 1000 - Date.now();
    if (connection.expiry) clearTimeout(connection.expiry);
    const reverify = connection.caller?.schema === 'iam' && ms > this.limits.reverifyMs;
    connection.expiry = reverify
      ? setTimeout(() => void this.reverify(connection), this.limits.reverifyMs)
      : setTimeout(() => connection.close(CloseCode.Forbidden, 'token expired'), Math.min(Math.max(ms, 0), 2 ** 31 - 1));
    connection.expiry.unref();
  }

  private async reverify(connection: Connection): Promise<void> {
    const env = this.deps.store.environment;
    if (!env || !this.connections.has(connection)) return;
    try {
      connection.caller = await this.deps.authenticate({ authkind: connection.authkind, authorization: connection.authorization, remoteAddress: connection.remoteAddress }, env, connection.dataset);
    } catch (err) {
      if ((err as { status?: number }).status !== 503) return connection.close(CloseCode.Forbidden, 'credentials no longer accepted');
    }
    this.watchExpiry(connection);
  }

  /** A config changed: each affected connection is authorized again against it, or ended (4403). */
  private async recheck(affected: (c: Connection) => boolean): Promise<void> {
    for (const connection of [...this.connections]) {
      if (!affected(connection)) continue;
      const state = this.deps.store.dataset(connection.datasetId);
      const env = this.deps.store.environment;
      if (!state || !env) {
        connection.close(CloseCode.Forbidden, 'the dataset is no longer served');
        continue;
      }
      if (state.status !== 'ready') continue;
      connection.dataset = state.config;
      this.deps.dispatcher.updateDataset(state.config, connection.datasetId);
      if (!connection.caller) continue; // not initialised yet: checked at init
      try {
        connection.caller = await this.deps.authenticate({ authkind: connection.authkind, authorization: connection.authorization, remoteAddress: connection.remoteAddress }, env, state.config);
      } catch {
        connection.close(CloseCode.Forbidden, 'access withdrawn by a configuration change');
      }
    }
  }

  /**
   * Shutdown: every connection is closed with 1012 (service restart), on both protocols, so
   * clients reconnect (to another replica) and resume with `after: <cursor>`. Waits up to
   * `waitMs` (at most 2 s) for the clients' close frames, then cuts the rest.
   */
  async close(waitMs = 2000): Promise<void> {
    this.deps.store.off('dataset', this.onDataset);
    this.deps.store.off('environment', this.onEnvironment);
    const gone = [...this.connections].map((c) => new Promise<void>((resolve) => (c.socket.readyState === c.socket.CLOSED ? resolve() : c.socket.once('close', () => resolve()))));
    for (const c of this.connections) c.close(SERVICE_RESTART, 'service restart: reconnect and resume after your last cursor');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(gone), new Promise((resolve) => (timer = setTimeout(resolve, Math.min(waitMs, 2000))))]);
    clearTimeout(timer);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    for (const c of this.connections) c.socket.terminate();
  }
}

export interface Session {
  /** Authenticates from connection_init's payload unless the upgrade did; throws ApiError 401/403. */
  init(payload: unknown): Promise<void>;
  context(): GraphQLContext;
  schema(): ReturnType<typeof datasetSchema>;
  /** Parses, validates and measures the operation that will run against the configured limits (limits.ts). */
  prepare(query: string, variables: Record<string, unknown> | null | undefined, operationName: string | null | undefined): ReturnType<typeof prepareOperation>;
}

/** The protocol for the offered subprotocols: graphql-transport-ws first; undefined when only others are offered. */
export function chooseProtocol(header: string | undefined): typeof TRANSPORT_WS | typeof LEGACY_WS | undefined {
  if (!header || !header.trim()) return TRANSPORT_WS;
  const offered = header.split(',').map((p) => p.trim());
  if (offered.includes(TRANSPORT_WS)) return TRANSPORT_WS;
  if (offered.includes(LEGACY_WS)) return LEGACY_WS;
  return undefined;
}

/** `{"Authorization": "…"}` (any case of the key) from connection_init's payload. */
export function initAuthorization(payload: unknown): string | undefined {
  if (!payload || typeof payload !== 'object') return undefined;
  for (const [key, value] of Object.entries(payload)) if (key.toLowerCase() === 'authorization' && typeof value === 'string') return value;
  return undefined;
}

/** Close reasons are at most 123 bytes. */
export function closeReason(text: string): string {
  const buf = Buffer.from(text);
  return buf.length <= 123 ? text : buf.subarray(0, 120).toString('utf8').replace(/\uFFFD$/, '') + '…';
}

/** An upgrade that does not happen: an HTTP answer like REST's, then the socket closes. */
function refuse(res: ServerResponse, err: unknown, logger: Logger, request: { reqId: string; authorization?: string }): void {
  if (res.writableEnded) return;
  const e = toApiError(err);
  if (!e) logger.error({ reqId: request.reqId, err: (err as Error)?.message }, 'WebSocket upgrade failed');
  const status = e?.status ?? 500;
  if (e) logRefusal(logger, { reqId: request.reqId, status, code: e.code, reason: e.message, authorization: request.authorization });
  const body = JSON.stringify({ error: { code: e?.code ?? 'INTERNAL', message: e?.message ?? 'internal error', details: e?.details ?? [] }, requestId: request.reqId });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-request-id': request.reqId,
    connection: 'close',
    ...(e?.retryAfter ? { 'retry-after': String(e.retryAfter) } : {}),
  });
  res.end(body);
}

export { graphqlErrorOf };
