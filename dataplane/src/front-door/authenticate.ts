/** What every front door (REST, GraphQL over HTTP and WebSocket, admin) is given to authenticate a caller and to filter requests. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { Authkind } from './gateway.js';

/**
 * The caller, or a promise of it when authentication has to wait (a token review, a JWKS fetch).
 * A refusal is thrown, or rejects the promise: callers `await` the result inside their own error handling.
 */
export type Authenticate = (input: { authkind: Authkind; authorization?: string; remoteAddress?: string }, env: EnvironmentConfig, dataset: DatasetConfig) => Caller | Promise<Caller>;

/** Connect-style middleware on node requests (Express middleware fits). */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
