/**
 * `npm run -s token -- --sub <sub> [--email <email>] [--ttl <seconds>] [--environment <name>]`
 *
 * Prints (on stdout, nothing else) an ID token signed by the development issuer of the environment
 * in the example manifests (or those in DAS_MANIFESTS), using the signing key under DATA_DIR
 * (default `.data/`) — the same key `npm start` verifies with.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadManifests } from '../../../model/manifests.js';
import { renderEnvironmentConfig } from '../../../model/render.js';
import { dataPlaneSettings, type DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { developmentIssuerOn, loadOrCreateDevIssuer, MAX_DEV_TTL_SECONDS } from './dev-issuer.js';

const USAGE = `usage: npm run -s token -- --sub <subject> [--email <email>] [--ttl <seconds>] [--environment <name>]

  --sub          the token's subject (sub and cognito:username), required
  --email        adds the email and email_verified claims
  --ttl          lifetime in seconds, 1..${MAX_DEV_TTL_SECONDS} (default 3600)
  --environment  which Environment of the manifests (default: the only one with a development issuer)

environment: DAS_MANIFESTS (manifest directory, default examples/), DATA_DIR (default .data/),
             PORT (the data plane's, when not 8080: the token's iss names it)`;

class UsageError extends Error {}

/** The nearest directory with a package.json: the checkout from source (tsx) and from the build (dist/). */
function packageRoot(from: string): string {
  for (let dir = from; dirname(dir) !== dir; dir = dirname(dir)) if (existsSync(join(dir, 'package.json'))) return dir;
  return process.cwd();
}

async function main(argv: string[], settings: DataPlaneSettings): Promise<string> {
  let values: { sub?: string; email?: string; ttl?: string; environment?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { sub: { type: 'string' }, email: { type: 'string' }, ttl: { type: 'string' }, environment: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (!values.sub || values.sub.trim() === '') throw new UsageError('--sub <subject> is required');
  let ttlSeconds: number | undefined;
  if (values.ttl !== undefined) {
    ttlSeconds = /^[0-9]+$/.test(values.ttl) ? Number(values.ttl) : NaN;
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_DEV_TTL_SECONDS) {
      throw new UsageError(`--ttl must be a whole number of seconds from 1 to ${MAX_DEV_TTL_SECONDS}`);
    }
  }
  if (values.email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(values.email)) throw new UsageError('--email must look like an email address');

  const repoRoot = packageRoot(dirname(fileURLToPath(import.meta.url)));
  const manifestDir = settings.DAS_MANIFESTS || resolve(repoRoot, 'examples');
  const environments = loadManifests(manifestDir).environments.map(renderEnvironmentConfig);
  const candidates = values.environment
    ? environments.filter((e) => e.id === values.environment)
    : environments.filter((e) => e.identityProvider?.development);
  if (candidates.length === 0) {
    throw new Error(
      values.environment
        ? `no Environment "${values.environment}" in ${manifestDir}`
        : `no Environment with identityProvider.development: true in ${manifestDir}`,
    );
  }
  if (candidates.length > 1) throw new UsageError(`several environments in ${manifestDir}; choose one with --environment (${candidates.map((e) => e.id).join(', ')})`);
  const env = candidates[0];
  const idp = env.identityProvider;
  if (!idp?.development) throw new Error(`environment "${env.id}" does not use the development issuer; get tokens from its identity provider (${idp?.issuer ?? 'none'})`);

  const dataDir = settings.DATA_DIR;
  // The data plane's iss names the port it listens on: the same PORT gives the same iss.
  const port = settings.PORT;
  const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: developmentIssuerOn(idp.issuer, port), audience: idp.audiences[0] });
  // On stderr (stdout holds only the token): a data plane started with another DATA_DIR has another
  // key and refuses this token as UNKNOWN_KEY.
  process.stderr.write(`token: signed with ${issuer.keyPath} (key ${issuer.kid}); only a data plane started with DATA_DIR=${resolve(dataDir)} accepts it\n`);
  return issuer.sign({ sub: values.sub, email: values.email, ttlSeconds });
}

// The data plane's settings (DATA_DIR, DAS_MANIFESTS), parsed as the data plane parses them.
Promise.resolve()
  .then(() => main(process.argv.slice(2), dataPlaneSettings(process.env)))
  .then(
  (token) => {
    process.stdout.write(`${token}\n`);
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`token: ${err.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`token: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
