/**
 * The older `graphql-ws` subprotocol of subscriptions-transport-ws, which AppSync-style and older
 * Apollo clients speak:
 *
 *   client → server: connection_init {payload}, start {id, payload: {query, variables, operationName}},
 *                    stop {id}, connection_terminate
 *   server → client: connection_ack, connection_error {payload}, ka, data {id, payload: {data, errors}},
 *                    error {id, payload: [errors]}, complete {id}
 *
 * Protocol faults close the socket with the codes graphql-transport-ws uses, so both protocols
 * end alike: 4400 malformed message, 4401 start before the connection was acknowledged, 4403
 * credentials refused, 4408 no connection_init in time, 4409 an id already in use, 4429 a second
 * connection_init. Keep-alive: `ka` right after the ack, then every keepAliveMs.
 */
import { getOperationAST, GraphQLError, type ExecutionResult } from 'graphql';
import { CloseCode, type WebSocket as ProtocolSocket } from 'graphql-ws';
import { ApiError } from '../engine/errors.js';
import type { Session, SubscriptionLimits } from './websocket.js';
import { subscribeShared } from './shared-execution.js';
import { executeOperation } from './operation.js';

export type LegacyClientMessage =
  | { type: 'connection_init'; payload?: Record<string, unknown> }
  | { type: 'start'; id: string; payload: { query: string; variables?: Record<string, unknown> | null; operationName?: string | null } }
  | { type: 'stop'; id: string }
  | { type: 'connection_terminate' };

export type LegacyServerMessage =
  | { type: 'connection_ack' }
  | { type: 'connection_error'; payload: { message: string; code?: string } }
  | { type: 'ka' }
  | { type: 'data'; id: string; payload: ExecutionResult }
  | { type: 'error'; id: string; payload: ReturnType<GraphQLError['toJSON']>[] }
  | { type: 'complete'; id: string };

/** Close codes: graphql-transport-ws's own (graphql-ws's CloseCode). */
export const LEGACY_CLOSE = {
  malformed: CloseCode.BadRequest,
  unauthorized: CloseCode.Unauthorized,
  forbidden: CloseCode.Forbidden,
  initTimeout: CloseCode.ConnectionInitialisationTimeout,
  duplicateId: CloseCode.SubscriberAlreadyExists,
  tooManyInits: CloseCode.TooManyInitialisationRequests,
} as const;

/** A client message, or the reason it is malformed. Pure. */
export function parseLegacyMessage(text: string): LegacyClientMessage | { malformed: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { malformed: 'message is not JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { malformed: 'message is not an object' };
  const m = value as Record<string, unknown>;
  switch (m.type) {
    case 'connection_init':
      if (m.payload !== undefined && m.payload !== null && (typeof m.payload !== 'object' || Array.isArray(m.payload))) return { malformed: 'connection_init payload must be an object' };
      return { type: 'connection_init', payload: (m.payload as Record<string, unknown> | null) ?? undefined };
    case 'start': {
      if (typeof m.id !== 'string' || !m.id) return { malformed: 'start needs a non-empty string id' };
      const p = m.payload as Record<string, unknown> | undefined;
      if (!p || typeof p !== 'object' || Array.isArray(p)) return { malformed: 'start needs a payload object' };
      if (typeof p.query !== 'string') return { malformed: 'start payload needs a query string' };
      if (p.variables !== undefined && p.variables !== null && (typeof p.variables !== 'object' || Array.isArray(p.variables))) return { malformed: 'start payload variables must be an object' };
      if (p.operationName !== undefined && p.operationName !== null && typeof p.operationName !== 'string') return { malformed: 'start payload operationName must be a string' };
      return { type: 'start', id: m.id, payload: { query: p.query, variables: p.variables as Record<string, unknown> | null, operationName: p.operationName as string | null } };
    }
    case 'stop':
      if (typeof m.id !== 'string' || !m.id) return { malformed: 'stop needs a non-empty string id' };
      return { type: 'stop', id: m.id };
    case 'connection_terminate':
      return { type: 'connection_terminate' };
    default:
      return { malformed: `unknown message type ${JSON.stringify(m.type)?.slice(0, 40)}` };
  }
}

/**
 * Serves the protocol on a socket of the binding (ws-binding.ts: errors, binary frames, pings and
 * the send budget are its job); returns what to do once the socket has closed.
 */
export function serveLegacyProtocol(socket: ProtocolSocket, session: Session, limits: Pick<SubscriptionLimits, 'initTimeoutMs' | 'keepAliveMs' | 'perConnection'>): () => void {
  let initialising = false;
  let acknowledged = false;
  const operations = new Map<string, AsyncIterator<ExecutionResult> | undefined>();
  const send = async (message: LegacyServerMessage) => socket.send(JSON.stringify(message));
  const close = (code: number, reason: string) => void socket.close(code, reason);

  const initTimer = setTimeout(() => !acknowledged && close(LEGACY_CLOSE.initTimeout, 'connection initialisation timeout'), limits.initTimeoutMs);
  initTimer.unref();
  let keepAlive: NodeJS.Timeout | undefined;

  socket.onMessage(async (text) => {
    const message = parseLegacyMessage(text);
    if ('malformed' in message) return close(LEGACY_CLOSE.malformed, message.malformed);
    await handle(message);
  });

  return () => {
    clearTimeout(initTimer);
    if (keepAlive) clearInterval(keepAlive);
    for (const iterator of operations.values()) void iterator?.return?.();
    operations.clear();
  };

  async function handle(message: LegacyClientMessage): Promise<void> {
    switch (message.type) {
      case 'connection_init': {
        if (initialising) return close(LEGACY_CLOSE.tooManyInits, 'too many initialisation requests');
        initialising = true;
        try {
          await session.init(message.payload);
        } catch (err) {
          const e = err instanceof ApiError ? err : undefined;
          await send({ type: 'connection_error', payload: { message: e?.message ?? 'forbidden', code: e?.code } });
          return close(e?.status === 401 ? LEGACY_CLOSE.unauthorized : LEGACY_CLOSE.forbidden, 'forbidden');
        }
        acknowledged = true;
        clearTimeout(initTimer);
        await send({ type: 'connection_ack' });
        await send({ type: 'ka' });
        keepAlive = setInterval(() => void send({ type: 'ka' }), limits.keepAliveMs);
        keepAlive.unref();
        return;
      }
      case 'start': {
        if (!acknowledged) return close(LEGACY_CLOSE.unauthorized, 'unauthorized: send connection_init first');
        if (operations.has(message.id)) return close(LEGACY_CLOSE.duplicateId, `subscriber for ${message.id.slice(0, 60)} already exists`);
        if (operations.size >= limits.perConnection) {
          return void send({ type: 'error', id: message.id, payload: [new GraphQLError(`at most ${limits.perConnection} subscriptions per connection`, { extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } }).toJSON()] });
        }
        operations.set(message.id, undefined);
        return run(message.id, message.payload);
      }
      case 'stop': {
        const iterator = operations.get(message.id);
        if (!operations.has(message.id)) return;
        operations.delete(message.id);
        await iterator?.return?.();
        await send({ type: 'complete', id: message.id });
        return;
      }
      case 'connection_terminate':
        return close(1000, 'terminated');
    }
  }

  async function run(id: string, payload: { query: string; variables?: Record<string, unknown> | null; operationName?: string | null }): Promise<void> {
    const schema = session.schema();
    const fail = async (errors: readonly GraphQLError[]) => {
      if (!operations.has(id)) return;
      operations.delete(id);
      await send({ type: 'error', id, payload: errors.map((e) => e.toJSON()) });
    };
    const prepared = session.prepare(payload.query, payload.variables, payload.operationName);
    if (prepared.errors) return fail(prepared.errors);
    const document = prepared.document;
    const operation = getOperationAST(document, payload.operationName ?? undefined);
    if (!operation) return fail([new GraphQLError('name the operation to run (operationName)')]);
    const args = { schema, document, contextValue: session.context(), variableValues: payload.variables ?? undefined, operationName: payload.operationName ?? undefined };
    if (operation.operation !== 'subscription') {
      const result = await executeOperation(args);
      if (!operations.has(id)) return;
      operations.delete(id);
      await send({ type: 'data', id, payload: result as ExecutionResult });
      await send({ type: 'complete', id });
      return;
    }
    const result = await subscribeShared(args);
    if (!(Symbol.asyncIterator in result)) return fail(result.errors ?? [new GraphQLError('subscription failed')]);
    const iterator = result[Symbol.asyncIterator]();
    if (!operations.has(id)) return void iterator.return?.(); // stopped meanwhile
    operations.set(id, iterator);
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        await send({ type: 'data', id, payload: next.value });
      }
    } catch (err) {
      return fail([err instanceof GraphQLError ? err : new GraphQLError((err as Error).message)]);
    }
    if (operations.get(id) === iterator) {
      operations.delete(id);
      await send({ type: 'complete', id });
    }
  }
}
