/** What every front door (REST, GraphQL over HTTP and WebSocket, admin) is given to authenticate a caller and to filter requests. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { Authkind } from './gateway.js';

export type Authenticate = (input: { authkind: Authkind; authorization?: string; remoteAddress?: string }, env: EnvironmentConfig, dataset: DatasetConfig) => Promise<Caller>;

/** Connect-style middleware on node requests (Express middleware fits). */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
