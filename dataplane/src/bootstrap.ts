/**
 * Wires the data plane's parts for a process: authentication, firewall, raw SQL, config source.
 * `main.ts` (npm start, the container) and the test harness both call it, so they run one path.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { authenticateNow, TokenVerifierCache } from './auth/authenticator.js';
import { loadOrCreateDevIssuer } from './auth/dev-issuer.js';
import { PostgresReadOnlyExecutor } from './drivers/postgres/readonly.js';
import { executeRawQuery, rawSqlLimits, runRawSql } from './rawsql/handler.js';
import type { ConfigStore } from './config/store.js';
import { firewallBodyMiddleware, firewallMiddleware, type FirewallConfig } from './firewall/index.js';
import type { AppDeps } from './http/app.js';
import { startDataPlane, type ConfigSource, type DataPlane } from './server.js';
import { NO_KUBERNETES_CREDENTIALS, serviceAccountVerifier } from './auth/token-review.js';
import { loadPageTokenKey, PageTokens } from './engine/page-token.js';
import { importRootOf, pipeliningOf, type DataPlaneSettings } from '../../model/settings/dataplane.js';

export interface BootstrapOptions {
  logger: Logger;
  configSource: ConfigSource;
  dataDir: string;
  port?: number;
  host?: string;
  /** The process settings, parsed at start-up (main.ts) or by the test harness. */
  settings: DataPlaneSettings;
}

/** No environment yet: nothing is blocked by IP, no managed rules (requests then fail with 503 anyway). */
const OPEN_FIREWALL: FirewallConfig = { ipAddresses: { allowed: [], blocked: [] }, managedRules: [], trustedProxies: [] };

export const DEV_ISSUER_JWKS_PATH = '/.well-known/dev-issuer/jwks.json';

export async function bootstrapDataPlane(options: BootstrapOptions): Promise<DataPlane> {
  const verifiers = new TokenVerifierCache({ dataDir: options.dataDir, issuerPort: options.port });
  const { settings } = options;
  const serviceAccountLogger = options.logger.child({ component: 'service-accounts' });
  const serviceAccounts = serviceAccountVerifier(settings, (message) => serviceAccountLogger.warn(message));
  let store: ConfigStore | undefined;
  const firewallConfig = () => store?.environment?.gateways.api.firewall ?? OPEN_FIREWALL;
  const firewallLogger = options.logger.child({ component: 'firewall' });

  /** The development issuer's public keys, for clients that verify tokens themselves. */
  const extraRoutes: AppDeps['extraRoutes'] = (app) => {
    app.get(DEV_ISSUER_JWKS_PATH, async (_req, res, next) => {
      try {
        const provider = store?.environment?.identityProvider;
        if (!provider?.development) {
          res.status(404).json({ error: { code: 'NOT_FOUND', message: 'this environment has no development issuer', details: [] } });
          return;
        }
        const issuer = await loadOrCreateDevIssuer(options.dataDir, { issuer: provider.issuer, audience: provider.audiences[0] });
        res.json(issuer.jwks());
      } catch (err) {
        next(err);
      }
    });
  };

  // Before serving: a bad DAS_PAGE_TOKEN_KEY stops the start instead of failing list requests.
  const pageTokens = new PageTokens(loadPageTokenKey(options.dataDir, settings));
  const sqlLimits = rawSqlLimits(settings);
  const dataPlane = await startDataPlane({
    bodyBudgetBytes: settings.DAS_BODY_BUDGET_BYTES,
    requestTimeoutMs: settings.DAS_REQUEST_TIMEOUT_MS,
    pipelining: pipeliningOf(settings),
    asyncWrites: { maxQueuedOps: settings.DAS_ASYNC_QUEUE_LIMIT },
    logger: options.logger,
    configSource: options.configSource,
    port: options.port,
    host: options.host,
    settings,
    authenticate: (input, env, dataset) => authenticateNow(input, env, dataset, verifiers, serviceAccounts),
    firewall: (s) => {
      store = s;
      return firewallMiddleware(firewallConfig, firewallLogger);
    },
    bodyFirewall: firewallBodyMiddleware(firewallConfig, firewallLogger),
    rawQuery: (input) => executeRawQuery({ ...input, limits: sqlLimits }),
    readOnly: new PostgresReadOnlyExecutor({ logger: options.logger.child({ component: 'raw-sql' }) }),
    extraRoutes,
    transactions: { importRoot: importRootOf({ ...settings, DATA_DIR: options.dataDir }) },
    adminDirectory: join(options.dataDir, 'datasets'),
  });
  if (!serviceAccounts && store?.environment?.gateways.iam.trust === 'verified') {
    await dataPlane.stop({ deadlineMs: 0 });
    throw new Error(NO_KUBERNETES_CREDENTIALS);
  }
  dataPlane.engine.pageTokens = pageTokens;
  dataPlane.engine.runSql = (dataset, driver, request, ctx, limits, whenServed) => runRawSql(dataset, driver, request, ctx, { ...sqlLimits, ...limits }, whenServed);
  return dataPlane;
}
