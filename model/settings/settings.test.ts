/** The settings registry: one declaration per variable, parsed once, rendered into `--help` and the README. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { editDistance, parseSettings, renderUsage, SettingError, unknownSettings, wholeNumber } from './declare.js';
import { DATAPLANE_DEFAULTS, DATAPLANE_SETTINGS, dataPlaneSettings } from './dataplane.js';
import { OPERATOR_SETTINGS, operatorSettings } from './operator.js';
import { README, withSettingsTable } from './readme.js';

describe('settings registry', () => {
  it('unset or empty variables take their defaults; set ones are typed', () => {
    expect(DATAPLANE_DEFAULTS).to.include({ PORT: 8080, HOST: '127.0.0.1', DAS_CONFIG_SOURCE: 'files', DAS_BULK_WRITERS: 2, DAS_BULK_CHUNK_ROWS: 10_000 });
    const s = dataPlaneSettings({ PORT: '9000', DAS_BULK_WRITERS: '8', DAS_S3_FORCE_PATH_STYLE: 'false', DAS_ADMIN_ALLOWED_ENDPOINTS: 'HTTP://Peer:8085/x, http://127.0.0.1:8000', HOST: '' });
    expect(s).to.include({ PORT: 9000, DAS_BULK_WRITERS: 8, DAS_S3_FORCE_PATH_STYLE: false, HOST: '127.0.0.1' });
    expect(s.DAS_ADMIN_ALLOWED_ENDPOINTS).to.deep.equal(['http://peer:8085', 'http://127.0.0.1:8000']);
  });

  it('refuses the values that were once ignored without a word, naming the variable, the value and what is allowed', () => {
    const refusals: [Record<string, string>, string][] = [
      [{ DAS_BULK_CHUNK_ROWS: 'abc' }, 'DAS_BULK_CHUNK_ROWS="abc" is not allowed: a whole number of at least 1'],
      [{ DAS_BULK_WRITERS: '20' }, 'DAS_BULK_WRITERS="20" is not allowed: a whole number from 1 to 8'],
      [{ DAS_BULK_CONCURRENCY: '0' }, 'DAS_BULK_CONCURRENCY="0" is not allowed: a whole number of at least 1'],
      [{ DAS_BULK_LEASE_MS: '-1' }, 'DAS_BULK_LEASE_MS="-1" is not allowed: a whole number of at least 1'],
      [{ DAS_CONFIG_SOURCE: 'file' }, 'DAS_CONFIG_SOURCE="file" is not allowed: one of files, kubernetes'],
      [{ PORT: 'abc' }, 'PORT="abc" is not allowed: a whole number from 0 to 65535'],
      [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL="verbose" is not allowed: one of trace, debug, info, warn, error, fatal, silent'],
      [{ DAS_UPSTREAM_URL: 'upstream:8080' }, 'DAS_UPSTREAM_URL="upstream:8080" is not allowed: an http:// or https:// URL'],
      [{ DAS_INVOKERS: '{"a":1}' }, 'DAS_INVOKERS="{\\"a\\":1}" is not allowed: a JSON array of strings'],
      [{ DAS_TOKEN_REVIEW_CACHE_MS: '600000' }, 'DAS_TOKEN_REVIEW_CACHE_MS="600000" is not allowed: a whole number from 0 to 300000'],
    ];
    for (const [env, message] of refusals) {
      expect(() => dataPlaneSettings(env)).to.throw(SettingError, message);
      expect(() => dataPlaneSettings(env)).to.throw(/^[^\n]+$/);
    }
  });

  it('never echoes a credential', () => {
    expect(() => dataPlaneSettings({ DAS_PAGE_TOKEN_KEY: 'sekrit' })).to.throw('DAS_PAGE_TOKEN_KEY=(a value, not shown) is not allowed');
  });

  it('whole numbers are digits only: no fractions, exponents, signs or hex', () => {
    const n = wholeNumber(1, { min: 0 }, { description: '', readers: ['dataplane'] });
    expect(['0', '12', ' 7 '].map((raw) => n.parse(raw))).to.deep.equal([0, 12, 7]);
    expect(['1.5', '1e3', '+3', '0x10', '', '9007199254740993'].map((raw) => n.parse(raw))).to.deep.equal([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('warns about an unknown DAS_* variable, naming the closest known one', () => {
    expect(unknownSettings(DATAPLANE_SETTINGS, { DAS_BULK_WRITER: '3', DAS_BULK_WRITERS: '3', HOME: '/root' })).to.deep.equal([
      'DAS_BULK_WRITER is not a setting of this program (ignored); did you mean DAS_BULK_WRITERS?',
    ]);
    expect(unknownSettings(DATAPLANE_SETTINGS, { DAS_CONFIG_SOURCES: 'files' })[0]).to.contain('did you mean DAS_CONFIG_SOURCE?');
    expect(editDistance('kitten', 'sitting')).to.equal(3);
  });

  it('--help lists every variable a program reads with its real default', () => {
    const usage = renderUsage(DATAPLANE_SETTINGS, 'dataplane');
    expect(usage).to.contain('HOST (127.0.0.1)');
    for (const name of Object.keys(DATAPLANE_SETTINGS).filter((n) => DATAPLANE_SETTINGS[n as keyof typeof DATAPLANE_SETTINGS].readers.includes('dataplane'))) expect(usage).to.contain(`  ${name} (`);
    expect(renderUsage(OPERATOR_SETTINGS, 'operator')).to.contain('METRICS_PORT (9090)');
  });

  it("README's configuration table is the one the declarations give (npm run settings:readme rewrites it)", () => {
    const readme = readFileSync(README, 'utf8');
    expect(withSettingsTable(readme) === readme, 'README.md differs from model/settings/dataplane.ts: run npm run settings:readme').to.equal(true);
    for (const name of ['DAS_PAGE_TOKEN_KEY', 'DAS_S3_FORCE_PATH_STYLE', 'DAS_BULK_WAREHOUSE_POLL_MS']) expect(readme).to.contain(`| \`${name}\` |`);
  });

  it('the operator list parses the same way', () => {
    expect(operatorSettings({ LEASE_DURATION_SECONDS: '4.5' }).LEASE_DURATION_SECONDS).to.equal(4500);
    expect(() => parseSettings(OPERATOR_SETTINGS, { IMAGE_PULL_POLICY: 'Sometimes' })).to.throw('IMAGE_PULL_POLICY="Sometimes" is not allowed: one of Always, IfNotPresent, Never');
  });
});
