/**
 * TEST PEER ONLY. `npm run peer:snowflake -- [--port <n>] [--readonly-role <ROLE> …] [--account <A>]`:
 * the Snowflake test peer with its own embedded PostgreSQL (data in a temporary directory removed
 * on exit), on 127.0.0.1. Prints its URL and the connection settings; stops on SIGINT/SIGTERM.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startEmbeddedPostgres } from '../../../dataplane/src/db/embedded.js';
import { startSnowflakeTestPeer } from './peer.js';

function usage(problem: string): never {
  process.stderr.write(`${problem}\nusage: npm run peer:snowflake -- [--port <0-65535>] [--readonly-role <ROLE>]… [--account <ACCOUNT>]\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values: { port?: string; 'readonly-role'?: string[]; account?: string };
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string' }, 'readonly-role': { type: 'string', multiple: true }, account: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    usage((err as Error).message);
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`--port: expected an integer from 0 to 65535, got ${JSON.stringify(values.port)}`);

  const dir = mkdtempSync(join(tmpdir(), 'snowflake-test-peer-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  let postgres: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  try {
    postgres = await startEmbeddedPostgres({ dir });
    const peer = await startSnowflakeTestPeer({
      adminUrl: postgres.url,
      port,
      ...(values['readonly-role'] ? { readOnlyRoles: [...values['readonly-role'], 'SERVICE_READONLY'] } : {}),
      ...(values.account ? { account: values.account } : {}),
    });
    process.stdout.write(
      [
        `Snowflake test peer (a TEST PEER, not Snowflake) listening on ${peer.url}`,
        `  connection settings: account=${peer.account} accessUrl=${peer.url} username=das password=das`,
        `  read-only roles: ${[...(values['readonly-role'] ?? []), 'SERVICE_READONLY'].join(', ')} and any role ending in READONLY`,
        `  PostgreSQL data: ${dir} (removed on exit)`,
        '',
      ].join('\n'),
    );
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`${signal}: stopping the Snowflake test peer\n`);
      await peer.stop().catch(() => undefined);
      await postgres?.stop().catch(() => undefined);
      removeDir();
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
  } catch (err) {
    process.stderr.write(`could not start the Snowflake test peer: ${(err as Error).message}\n`);
    await postgres?.stop().catch(() => undefined);
    removeDir();
    process.exit(1);
  }
}

void main();
