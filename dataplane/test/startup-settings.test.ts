/**
 * Settings are parsed before anything starts (main.ts, model/settings/): a bad value stops the
 * process with one line naming the variable, the value and what is allowed — no stack trace, and
 * no embedded PostgreSQL started first. Run as a user runs it: main.ts as a process.
 */
import { expect } from 'chai';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../test-support/http.js';
import { startMain, stopMain, type MainProcess } from '../test-support/main-process.js';
import { freePort } from '../src/db/embedded.js';

describe('start-up settings (main.ts as a process)', () => {
  const refusals: [Record<string, string>, string][] = [
    [{ PORT: 'abc' }, 'PORT="abc" is not allowed: a whole number from 0 to 65535'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL="verbose" is not allowed: one of trace, debug, info, warn, error, fatal, silent'],
    [{ DAS_CONFIG_SOURCE: 'file' }, 'DAS_CONFIG_SOURCE="file" is not allowed: one of files, kubernetes'],
    [{ DAS_BULK_WRITERS: '20' }, 'DAS_BULK_WRITERS="20" is not allowed: a whole number from 1 to 8'],
    [{ DAS_BULK_CHUNK_ROWS: 'abc' }, 'DAS_BULK_CHUNK_ROWS="abc" is not allowed: a whole number of at least 1'],
    [{ DAS_CONFIG_SOURCE: 'kubernetes' }, 'DAS_CONFIG_SOURCE=kubernetes needs DAS_NAMESPACE and DAS_ENVIRONMENT'],
  ];
  for (const [env, message] of refusals) {
    it(`${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}: one line, exit 1, nothing started`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'das-settings-'));
      const main = startMain({ DATA_DIR: dataDir, ...env });
      expect(await main.exited).to.equal(1);
      expect(main.output()).to.equal(`data plane not started: ${message}\n`);
      expect(existsSync(join(dataDir, 'postgres')), 'the embedded PostgreSQL was not started').to.equal(false);
    });
  }

  it('an unknown DAS_* variable is a warning naming the closest known one, and the process starts', async () => {
    const port = await freePort();
    let main: MainProcess | undefined;
    try {
      // The function-gateway mode starts without a database: the quickest whole start-up.
      main = startMain({ DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: 'http://127.0.0.1:1', DAS_FUNCTION_NAME: 'f', PORT: String(port), DAS_BULK_WRITER: '3' });
      for (let i = 0; i < 600 && !main.output().includes('function gateway listening'); i++) await new Promise((r) => setTimeout(r, 100));
      const warning = main.output().split('\n').find((line) => line.includes('DAS_BULK_WRITER '));
      expect(warning, main.output()).to.contain('did you mean DAS_BULK_WRITERS?');
      expect(JSON.parse(warning!).level).to.equal(40);
      expect((await call(`http://127.0.0.1:${port}`, { path: '/healthz' })).status).to.equal(200);
    } finally {
      await stopMain(main);
    }
  });
});
