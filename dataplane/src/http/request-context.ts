/** Request ids and per-request logging. */
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    log: Logger;
  }
}

/**
 * Every request gets a UUID: the caller's `x-request-id` when it is a UUID (so traces join up),
 * otherwise a new one. It is echoed in `x-request-id` and bound into every log line.
 */
export function requestContext(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && UUID.test(incoming) ? incoming.toLowerCase() : randomUUID();
    req.log = logger.child({ reqId: req.id });
    res.setHeader('x-request-id', req.id);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const path = res.locals.redactPath ? '[redacted: blocked by the firewall]' : req.path.slice(0, 512);
      req.log.info({ method: req.method, path, status: res.statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
    });
    next();
  };
}
