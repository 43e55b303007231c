/** The log lines of the per-connection bounds (model/pipelining.ts), for the data plane and the function gateway. */
import type { Logger } from 'pino';
import type { PipeliningHooks } from '../../../model/pipelining.js';

export function pipeliningLogHooks(logger: Logger): PipeliningHooks {
  return {
    onSendTimeout: (socket, unsentBytes) => logger.warn({ remote: socket.remoteAddress, unsentBytes }, 'client took none of its answers within the send timeout: connection closed'),
    onTooManyPipelined: (socket) => logger.warn({ remote: socket.remoteAddress }, 'too many pipelined requests on one connection: closing it after the answers before the limit'),
  };
}
