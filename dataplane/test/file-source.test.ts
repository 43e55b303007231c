/** Hot reload of local manifest files: a real data plane serving a copy of examples/ that the test edits. */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ManifestError } from '../../model/manifests.js';
import type { DatasetConfig, EnvironmentConfig } from '../../model/types.js';
import { startFileConfigSource } from '../src/config/file-source.js';
import { adminClient, EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { capturingLogger } from '../test-support/logs.js';

/** Polls `check` until it returns true or `ms` pass; returns how long it took. */
async function eventually(check: () => Promise<boolean> | boolean, ms = 8000, what = 'condition'): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}


const copyExamples = () => {
  const dir = mkdtempSync(join(tmpdir(), 'das-manifests-'));
  cpSync(EXAMPLES_DIR, dir, { recursive: true });
  return dir;
};

/** Writes a file as editors do: a temporary file renamed over the old one. */
function replaceFile(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

describe('data plane: local manifest files are hot-reloaded', function () {
  this.timeout(60000);
  let dir: string;
  let dp: TestDataPlane;
  let admin: ReturnType<typeof adminClient>;
  const log = capturingLogger();
  const demoFile = () => join(dir, 'dataset-demo.yaml');
  const createCompany = (id: string, data: Record<string, unknown>) => admin({ path: '/demo', body: { create: { schema: 'demo.Company', id, data } } });

  before(async () => {
    dir = copyExamples();
    dp = await startTestDataPlane({ manifests: dir, logger: log.logger });
    admin = adminClient(dp);
  });
  after(async () => {
    await dp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a property added to a schema is accepted within seconds, without a restart', async () => {
    const before = await createCompany('hr-1', { name: 'A', founded: 1999 });
    expect(before.status).to.equal(400);
    expect(JSON.stringify(before.json)).to.include('founded');
    const original = readFileSync(demoFile(), 'utf8');
    const edited = original.replace(/( {4}demo\.Company:\n {6}properties:\n)/, '$1        founded: { type: integer }\n');
    expect(edited).not.to.equal(original);
    writeFileSync(demoFile(), edited);
    const ms = await eventually(async () => (await createCompany('hr-1', { name: 'A', founded: 1999 })).status === 201, 8000, 'the new property');
    console.log(`      (new property served ${ms} ms after the edit)`);
    expect((await admin({ path: '/demo/demo.Company/hr-1' })).json).to.include({ founded: 1999 });
    expect(log.lines.some((l) => l.msg === 'manifests reloaded' && l.changes.includes('updated dataset demo (generation 2)'))).to.equal(true);
  });

  it('an invalid edit is logged with the file and JSON path, and the previous config keeps serving', async () => {
    const valid = readFileSync(demoFile(), 'utf8');
    writeFileSync(demoFile(), valid.replace('founded: { type: integer }', 'founded: { type: integr }'));
    await eventually(() => log.lines.some((l) => l.file === demoFile() && l.level === 40), 8000, 'the warning');
    const warning = log.lines.find((l) => l.file === demoFile() && l.level === 40);
    expect(warning.problems[0].path).to.equal('$.spec.schemas["demo.Company"].properties.founded.type');
    expect(warning.msg).to.include('previous config keeps serving');
    expect((await createCompany('hr-2', { name: 'B', founded: 2001 })).status).to.equal(201);
    // Readiness says so too, naming the file: still 200 (the last good config serves), but `degraded`.
    const refused = await admin({ path: '/readyz' });
    expect(refused.status).to.equal(200);
    expect(refused.json.status).to.equal('degraded');
    expect(refused.json.config.file).to.equal(demoFile());
    expect(refused.json.config.problem).to.include('$.spec.schemas["demo.Company"].properties.founded.type');
    // Broken YAML too.
    writeFileSync(demoFile(), `${valid}\n  : [unclosed\n`);
    await eventually(() => log.lines.filter((l) => l.file === demoFile() && l.level === 40).length >= 2, 8000, 'the second warning');
    expect((await createCompany('hr-3', { name: 'C', founded: 2002 })).status).to.equal(201);
    // Fixed again (written as an editor does, by rename): a further change is picked up.
    replaceFile(demoFile(), valid.replace('founded: { type: integer }', 'founded: { type: integer }\n        motto: { type: string }'));
    await eventually(async () => (await createCompany('hr-4', { name: 'D', motto: 'onwards' })).status === 201, 8000, 'the fixed manifest');
    const fixed = await admin({ path: '/readyz' });
    expect(fixed.json.status, JSON.stringify(fixed.json)).to.equal('ready');
    expect(fixed.json.config).to.equal(undefined);
  });

  it('deleting a dataset file unloads the dataset (404); restoring it serves it again', async () => {
    const sealedFile = join(dir, 'dataset-sealed.yaml');
    const sealed = readFileSync(sealedFile, 'utf8');
    const probe = () => admin({ path: '/sealed/demo.Company/x' });
    expect((await probe()).status).to.equal(404);
    expect((await probe()).json.error.code).to.equal('RECORD_NOT_FOUND');
    rmSync(sealedFile);
    await eventually(async () => (await probe()).json?.error?.code !== 'RECORD_NOT_FOUND', 8000, 'the unload');
    const gone = await probe();
    expect(gone.status, gone.text).to.equal(404);
    expect(gone.json.error.code).to.not.equal('RECORD_NOT_FOUND');
    expect(dp.dataPlane.store.datasetIds()).to.not.include('sealed');
    writeFileSync(sealedFile, sealed);
    await eventually(async () => (await probe()).json?.error?.code === 'RECORD_NOT_FOUND', 8000, 'the restore');
  });
});

describe('data plane: file config source, start and change detection', function () {
  this.timeout(30000);
  const recorder = () => {
    const calls: string[] = [];
    const datasets = new Map<string, DatasetConfig>();
    let environment: EnvironmentConfig | undefined;
    return {
      calls,
      datasets,
      environment: () => environment,
      setEnvironment: (c: EnvironmentConfig) => {
        environment = c;
        calls.push(`env ${c.id}`);
      },
      upsertDataset: (c: DatasetConfig) => {
        datasets.set(c.id, c);
        calls.push(`upsert ${c.id} ${c.generation}`);
      },
      removeDataset: (id: string) => {
        datasets.delete(id);
        calls.push(`remove ${id}`);
      },
    };
  };
  const silent = pino({ level: 'silent' });

  it('an invalid manifest at start throws ManifestError naming the file and path', async () => {
    const dir = copyExamples();
    try {
      writeFileSync(join(dir, 'dataset-demo.yaml'), readFileSync(join(dir, 'dataset-demo.yaml'), 'utf8').replace('kind: postgres', 'kind: oracle'));
      const err = await startFileConfigSource({ path: dir, logger: silent }, recorder()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ManifestError);
      expect((err as ManifestError).file).to.equal(join(dir, 'dataset-demo.yaml'));
      expect((err as ManifestError).problems[0].path).to.equal('$.spec.location.kind');
      const missing = await startFileConfigSource({ path: EXAMPLES_DIR, environment: 'nowhere', logger: silent }, recorder()).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(missing?.message).to.include('no Environment "nowhere"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with fs.watch off, the poll alone notices edits; unchanged datasets are not re-prepared', async () => {
    const dir = copyExamples();
    const sink = recorder();
    const source = await startFileConfigSource({ path: dir, logger: silent, watch: false, pollMs: 100, debounceMs: 50 }, sink);
    try {
      expect(sink.calls).to.deep.equal(['env local', 'upsert demo 1', 'upsert sealed 1']);
      const file = join(dir, 'dataset-sealed.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replace('rawSqlEndpointEnabled: false', 'rawSqlEndpointEnabled: true'));
      await eventually(() => sink.calls.length > 3, 5000, 'the poll');
      expect(sink.calls.slice(3)).to.deep.equal(['upsert sealed 2']);
      expect(sink.datasets.get('sealed')?.auth.iam.rawSqlEndpointEnabled).to.equal(true);
      // The environment file: a firewall change reaches the sink, datasets stay as they are.
      const envFile = join(dir, 'environment.yaml');
      writeFileSync(envFile, readFileSync(envFile, 'utf8').replace('blocked: []', 'blocked: ["10.0.0.0/8"]'));
      await eventually(() => sink.calls.length > 4, 5000, 'the environment change');
      expect(sink.calls.slice(4)).to.deep.equal(['env local']);
      expect(sink.environment()?.gateways.api.firewall.ipAddresses.blocked).to.deep.equal(['10.0.0.0/8']);
    } finally {
      await source.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a single manifest file replaced by rename is picked up through its directory; stop() ends watching', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-manifest-file-'));
    const file = join(dir, 'all.yaml');
    const all = ['environment.yaml', 'dataset-demo.yaml', 'dataset-sealed.yaml'].map((f) => readFileSync(join(EXAMPLES_DIR, f), 'utf8')).join('\n---\n');
    writeFileSync(file, all);
    writeFileSync(join(dir, 'unrelated.yaml'), 'not: [a manifest');
    const sink = recorder();
    const source = await startFileConfigSource({ path: file, logger: silent, pollMs: 0 }, sink);
    try {
      replaceFile(file, all.split('\n---\n').slice(0, 2).join('\n---\n'));
      await eventually(() => sink.calls.includes('remove sealed'), 5000, 'the removal');
      expect([...sink.datasets.keys()]).to.deep.equal(['demo']);
    } finally {
      await source.stop();
    }
    const count = sink.calls.length;
    writeFileSync(file, all);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(sink.calls.length).to.equal(count);
    rmSync(dir, { recursive: true, force: true });
  });
});
