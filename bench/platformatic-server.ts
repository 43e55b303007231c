/**
 * Platformatic DB over the benchmark's database (bench/peers/platformatic.ts installs it): every
 * table of schema `demo` as REST, `GET /demoDemoPerson/{id}` the read by id. Logging at warn,
 * GraphQL off, the same pool size as the other servers.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(process.env.PLATFORMATIC_DIR!, 'node_modules', 'noop.js'));
const { buildServer } = require('@platformatic/db') as { buildServer(config: unknown): Promise<{ start(): Promise<unknown>; close(): Promise<void> }> };

const app = await buildServer({
  server: { hostname: '127.0.0.1', port: Number(process.env.PORT), logger: { level: 'warn' } },
  db: { connectionString: process.env.DATABASE_URL, schema: ['demo'], graphql: false, openapi: true, poolSize: Number(process.env.POOL_SIZE ?? 10) },
});
await app.start();
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
