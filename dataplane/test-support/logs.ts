/** A pino logger whose lines are kept as objects, to see what the data plane logged for a request. */
import pino from 'pino';
import { Writable } from 'node:stream';

export function capturingLogger() {
  const lines: any[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { logger, lines };
}
