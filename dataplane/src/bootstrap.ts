/**
 * Wires the data plane's parts for a process: authentication, firewall, raw SQL, config source.
 * `main.ts` (npm start, the container) and the test harness both call it, so they run one path.
 */
import type { Logger } from 'pino';
import { authenticateIam } from './auth/iam.js';
import { startDataPlane, type ConfigSource, type DataPlane } from './server.js';
import type { Authenticate } from './http/app.js';

export interface BootstrapOptions {
  logger: Logger;
  configSource: ConfigSource;
  dataDir: string;
  port?: number;
  host?: string;
  env?: NodeJS.ProcessEnv;
}

export async function bootstrapDataPlane(options: BootstrapOptions): Promise<DataPlane> {
  const authenticate: Authenticate = async (input, _env, dataset) => authenticateIam(input.authorization, dataset);
  return startDataPlane({
    logger: options.logger,
    configSource: options.configSource,
    port: options.port,
    host: options.host,
    env: options.env,
    authenticate,
  });
}
