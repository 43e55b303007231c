/**
 * `npm run bench:bulk-load`: a Parquet UPSERT of BENCH_ROWS demo.Person rows (default 1,000,000)
 * through a transaction on the data plane (a child process running the compiled entry point, as
 * the container image does; the script builds it first: under tsx the loader alone adds ~100 MB of
 * RSS that production never has) against
 * PostgreSQL's own COPY of the same rows from CSV, side by side in one run on one embedded
 * PostgreSQL: into the tables the transaction writes (a live and a history table with the data
 * plane's indexes, the two COPYs at once on two connections, as the transaction writes on two: the
 * expectation's baseline, docs/transactions.md "Figures"), and into a plain table with one index.
 * Reports the times, their ratios, and the data plane's peak RSS (sampled from /proc every 50 ms)
 * for the full file and for a quarter of it: with row-group streaming the peak does not grow with
 * the file. After each load it also reports the resting RSS: the lowest RSS over the
 * BENCH_REST_MS (10,000) that follow, the load finished and the process idle. Not a test: read
 * the figures.
 *
 * Beside the wall-clock times it reports the CPU seconds PostgreSQL (all its processes) and the
 * data plane spent on each, from /proc (PostgreSQL's background processes included), and the
 * load average before and after: on a shared machine the wall-clock ratio moves with what else
 * runs, the CPU seconds less. Of PostgreSQL's CPU, the part its backends spent (the statements the
 * connections sent; the rest is autovacuum, checkpoints, WAL writing) is printed apart.
 *
 * It also prints a bound: COPY straight into the live and history tables is the least CPU any load
 * that keeps history can spend, and that CPU plus the data plane's, spread over every core, is the
 * shortest such a load could take on this machine.
 *
 * Then the same rows (other ids) as files written by pyarrow with its defaults (snappy, dictionary,
 * row groups of 1,048,576) and by DuckDB with its defaults (snappy, row groups of 122,880), each
 * loaded the same way and reported against the same COPYs (the Python writers come from
 * scripts/python-peers/install.sh: DAS_PYTHON_PEERS, default ~/.cache/data-access-python).
 *
 * Like for like: the COPYs run into empty tables after VACUUM (ANALYZE) and CHECKPOINT, so each
 * real writer's load starts from the same state. Before each, the bench empties the dataset's
 * live, history and change-log tables for demo.Person (TRUNCATE through its own connection), then
 * runs VACUUM (ANALYZE) and CHECKPOINT: no load pays for the rows, dead tuples, autovacuum or
 * checkpoint an earlier load left behind. BENCH_INTO_FULL=1 skips that emptying, so DuckDB's load
 * goes into tables already holding pyarrow's 1,000,000 rows (with that load's autovacuum and
 * checkpoints behind it), as users also load: the into-a-full-table figure.
 *
 * BENCH_ROWS (1000000), BENCH_ROW_GROUP (50000), BENCH_CHUNK_ROWS (the data plane's default),
 * BENCH_WRITERS (DAS_BULK_WRITERS, the data plane's default), BENCH_INTO_FULL=1 (above), BENCH_REAL_ONLY=1 (only the pyarrow
 * and DuckDB files, against the same COPYs), BENCH_MALLOC_MMAP_THRESHOLD (the data plane's
 * MALLOC_MMAP_THRESHOLD_; the image's by default, '' for none).
 */
import { chmodSync, createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { cpus, homedir, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { startMain, waitReady } from '../dataplane/test-support/main-process.js';
import { backendCpuDelta, cpuMs, HEADERS, postgresBackendCpuMs, postgresCpuMs } from './support.js';
import { parquetFile } from '../dataplane/test-support/transactions.js';
import { changesTable } from '../dataplane/src/drivers/postgres/change-log.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ROW_GROUP = Number(process.env.BENCH_ROW_GROUP ?? 50_000);
const REST_MS = Number(process.env.BENCH_REST_MS ?? 10_000);
/** The data plane's MALLOC_MMAP_THRESHOLD_: the image's (Dockerfile) unless BENCH_MALLOC_MMAP_THRESHOLD says otherwise ('' for glibc's sliding default). */
const MMAP_THRESHOLD = process.env.BENCH_MALLOC_MMAP_THRESHOLD ?? /^ENV MALLOC_MMAP_THRESHOLD_=(\d+)$/m.exec(readFileSync(join(import.meta.dirname, '..', 'Dockerfile'), 'utf8'))?.[1] ?? '';

function rss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** CPU seconds of a process (user + system). */
const cpuSeconds = (pid: number) => (cpuMs(pid) ?? 0) / 1000;
/** CPU seconds of the whole PostgreSQL server, background processes included. */
const postgresCpu = (postmaster: number) => postgresCpuMs(postmaster) / 1000;

/** BENCH_INTO_FULL=1: each real writer's load after the first goes into the tables the earlier loads filled. */
const INTO_FULL = process.env.BENCH_INTO_FULL === '1';

/**
 * The state each COPY of the baseline starts from, for a load: demo.Person's live, history and
 * change-log tables empty, vacuumed and analysed, and the WAL checkpointed.
 */
async function emptyPersonTables(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Before the first load the tables may not exist yet (the data plane makes them on its first write).
    const tables = ['demo.demo_person', 'demo.demo_person_history', changesTable('demo')];
    const present = (await client.query('SELECT t FROM unnest($1::text[]) t WHERE to_regclass(t) IS NOT NULL', [tables])).rows.map((r) => r.t as string);
    if (present.length) await client.query(`TRUNCATE ${present.join(', ')}`);
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

function fixtures(dir: string, rows: number, name: string): { parquet: string; csv: string } {
  const ids = Array.from({ length: rows }, (_, i) => `p${i}`);
  const names = ids.map((id) => `person ${id}`);
  const emails = ids.map((id) => `${id}@example.com`);
  const ages = ids.map((_, i) => i % 100);
  const parquet = join(dir, `${name}.parquet`);
  writeFileSync(
    parquet,
    parquetFile(
      [
        { name: 'id', data: ids, type: 'STRING' },
        { name: 'name', data: names, type: 'STRING' },
        { name: 'email', data: emails, type: 'STRING' },
        { name: 'age', data: ages, type: 'INT32' },
      ],
      { rowGroupSize: ROW_GROUP },
    ),
  );
  const csv = join(dir, `${name}.csv`);
  writeFileSync(csv, ids.map((id, i) => `${id},${names[i]},${emails[i]},${ages[i]}`).join('\n') + '\n');
  return { parquet, csv };
}

/** The same rows as fixtures() (ids `<prefix><i>`) written by pyarrow and by DuckDB, each with its defaults. */
function realWriterFixtures(dir: string, rows: number): { pyarrow: string; duckdb: string } {
  const python = join(process.env.DAS_PYTHON_PEERS ?? join(homedir(), '.cache', 'data-access-python'), 'bin', 'python');
  const files = { pyarrow: join(dir, 'pyarrow.parquet'), duckdb: join(dir, 'duckdb.parquet') };
  const script = `
import sys, pyarrow as pa, pyarrow.parquet as pq, duckdb
n = ${rows}
def table(prefix):
    ids = [f"{prefix}{i}" for i in range(n)]
    return pa.table({"id": ids, "name": [f"person {i}" for i in ids], "email": [f"{i}@example.com" for i in ids], "age": pa.array([i % 100 for i in range(n)], type=pa.int32())})
pq.write_table(table("a"), sys.argv[1])
source = table("d")
duckdb.sql(f"COPY (SELECT * FROM source) TO '{sys.argv[2]}' (FORMAT parquet)")
`;
  execFileSync(python, ['-c', script, files.pyarrow, files.duckdb], { stdio: ['ignore', 'inherit', 'inherit'] });
  return files;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'das-bench-bulk-'));
  chmodSync(work, 0o755); // the embedded server runs as "postgres" when we are root
  const db = await startEmbeddedPostgres({ dir: join(work, 'pg') });
  const dataDir = join(work, 'data');
  mkdirSync(join(dataDir, 'imports'), { recursive: true });
  const full = fixtures(join(dataDir, 'imports'), ROWS, 'full');
  const quarter = fixtures(join(dataDir, 'imports'), Math.floor(ROWS / 4), 'quarter');
  const real = realWriterFixtures(join(dataDir, 'imports'), ROWS);
  const port = await freePort();
  const child = startMain(
    {
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DAS_BULK_POLL_MS: '200',
    ...(process.env.BENCH_CHUNK_ROWS ? { DAS_BULK_CHUNK_ROWS: process.env.BENCH_CHUNK_ROWS } : {}),
    ...(process.env.BENCH_WRITERS ? { DAS_BULK_WRITERS: process.env.BENCH_WRITERS } : {}),
    // glibc's mmap threshold, held where the image holds it (Dockerfile; '' runs without it).
    ...(MMAP_THRESHOLD ? { MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD } : {}),
    },
    'compiled',
  );
  const url = `http://127.0.0.1:${port}`;
  const postmaster = Number(readFileSync(join(work, 'pg', 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const loadBefore = load();
  try {
    await waitReady(url, child);
    const transaction = async (file: string) => {
      const [pgCpu, planeCpu, backends] = [postgresCpu(postmaster), cpuSeconds(child.child.pid!), postgresBackendCpuMs(postmaster)];
      const before = rss(child.child.pid!);
      let peak = before;
      const sampler = setInterval(() => {
        if (child.child.exitCode === null) peak = Math.max(peak, rss(child.child.pid!));
      }, 50);
      const started = Date.now();
      const res = await call(url, {
        path: '/demo',
        headers: HEADERS,
        body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(file).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
      });
      if (res.status !== 202) throw new Error(res.text);
      for (;;) {
        if (child.child.exitCode !== null) throw new Error(`the data plane exited (${child.child.exitCode}): ${child.output().slice(-3000)}`);
        const tx = (await call(url, { path: `/demo/Transaction/${res.json.id}`, headers: HEADERS })).json;
        if (tx.status === 'SUCCEEDED' || tx.status === 'FAILED') {
          clearInterval(sampler);
          if (tx.status === 'FAILED') throw new Error(JSON.stringify(tx));
          const cpu = {
            postgres: postgresCpu(postmaster) - pgCpu,
            backends: backendCpuDelta(backends, postgresBackendCpuMs(postmaster)) / 1000,
            dataPlane: cpuSeconds(child.child.pid!) - planeCpu,
          };
          const seconds = (Date.now() - started) / 1000;
          // Resting: the lowest RSS while the process idles after the load (what it keeps).
          let resting = rss(child.child.pid!);
          for (let waited = 0; waited < REST_MS; waited += 250) {
            await new Promise((r) => setTimeout(r, 250));
            resting = Math.min(resting, rss(child.child.pid!));
          }
          return { seconds, before, peak, resting, tx, cpu };
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // BENCH_REAL_ONLY=1: only the pyarrow and DuckDB files against the COPYs (a shorter run on a busy machine).
    const realOnly = process.env.BENCH_REAL_ONLY === '1';
    const small = realOnly ? undefined : await transaction(quarter.parquet);
    const big = realOnly ? undefined : await transaction(full.parquet);
    await emptyPersonTables(db.url);
    const pyarrow = await transaction(real.pyarrow);
    if (!INTO_FULL) await emptyPersonTables(db.url);
    const duckdb = await transaction(real.duckdb);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('CREATE TABLE bench_copy (id text PRIMARY KEY, name text, email text, age bigint)');
    // The transaction's tables vacuumed and the WAL checkpointed outside the timed COPYs, so the
    // background work the load left behind is not counted against COPY.
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
    const copyStarted = Date.now();
    let pgCpu = postgresCpu(postmaster);
    await pipeline(createReadStream(full.csv), client.query(copyStreams.from('COPY bench_copy (id, name, email, age) FROM STDIN WITH (FORMAT csv)')));
    const copySeconds = (Date.now() - copyStarted) / 1000;
    const copyCpu = postgresCpu(postmaster) - pgCpu;
    // The same work as the data plane's, as COPY: the live table and the history table with the same indexes.
    await client.query('CREATE TABLE bench_live (LIKE demo.demo_person INCLUDING ALL)');
    await client.query('CREATE TABLE bench_history (LIKE demo.demo_person_history INCLUDING ALL)');
    const csvWithSystem = join(work, 'system.csv');
    const now = new Date().toISOString();
    const lines = readFileSync(full.csv, 'utf8').trimEnd().split('\n').map((line) => `${line.split(',')[0]},1,${now},${now},${line.split(',').slice(1).join(',')}`);
    writeFileSync(csvWithSystem, lines.join('\n') + '\n');
    lines.length = 0;
    await client.query('CHECKPOINT');
    // Both COPYs at once, on two connections: the transaction writes on DAS_BULK_WRITERS (2) at once too.
    const second = new pg.Client({ connectionString: db.url });
    await second.connect();
    const shapedStarted = Date.now();
    pgCpu = postgresCpu(postmaster);
    const backends = postgresBackendCpuMs(postmaster);
    await Promise.all(
      (['bench_live', 'bench_history'] as const).map((table, i) =>
        pipeline(createReadStream(csvWithSystem), [client, second][i].query(copyStreams.from(`COPY ${table} (id, version, created_at, updated_at, name, email, age) FROM STDIN WITH (FORMAT csv)`))),
      ),
    );
    const shapedSeconds = (Date.now() - shapedStarted) / 1000;
    const shapedCpu = postgresCpu(postmaster) - pgCpu;
    const shapedBackendCpu = backendCpuDelta(backends, postgresBackendCpuMs(postmaster)) / 1000;
    await Promise.all([client.end(), second.end()]);

    const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
    console.log(`rows: ${ROWS} (row groups of ${ROW_GROUP}), Parquet ${mb(readFileSync(full.parquet).length)}, CSV ${mb(readFileSync(full.csv).length)}`);
    console.log(`PostgreSQL COPY into a live and a history table with the data plane's indexes (both at once): ${shapedSeconds.toFixed(1)} s`);
    console.log(`PostgreSQL COPY from CSV into a plain table (one index): ${copySeconds.toFixed(1)} s, ${(ROWS / copySeconds).toFixed(0)} rows/s`);
    if (small && big) {
      console.log(`data plane transaction (Parquet UPSERT, history, versions): ${big.seconds.toFixed(1)} s, ${(ROWS / big.seconds).toFixed(0)} rows/s; rowsWritten ${big.tx.actions[0].rowsWritten}`);
      console.log(`ratio to COPY into live + history (COPY time / transaction time; the expectation's baseline, docs/transactions.md): ${(shapedSeconds / big.seconds).toFixed(2)}; to COPY into a plain table ${(copySeconds / big.seconds).toFixed(2)}`);
      console.log(
        `data plane RSS: before ${mb(small.before)}, peak ${mb(small.peak)}, resting ${mb(small.resting)} loading ${ROWS / 4} rows; ` +
          `before ${mb(big.before)}, peak ${mb(big.peak)}, resting ${mb(big.resting)} loading ${ROWS} rows`,
      );
    }
    for (const [writer, run, file] of [
      ['pyarrow (defaults: snappy, dictionary)', pyarrow, real.pyarrow],
      [`DuckDB (defaults)${INTO_FULL ? ', into the tables holding pyarrow\'s rows' : ''}`, duckdb, real.duckdb],
    ] as const) {
      console.log(
        `${writer}: Parquet ${mb(readFileSync(file).length)}, ${run.seconds.toFixed(1)} s, ${(ROWS / run.seconds).toFixed(0)} rows/s, rowsWritten ${run.tx.actions[0].rowsWritten}; ` +
          `ratio to COPY into live + history ${(shapedSeconds / run.seconds).toFixed(2)}, to COPY into a plain table ${(copySeconds / run.seconds).toFixed(2)}; ` +
          `RSS before ${mb(run.before)}, peak ${mb(run.peak)}, resting ${mb(run.resting)}; CPU PostgreSQL ${run.cpu.postgres.toFixed(1)} s (backends ${run.cpu.backends.toFixed(1)} s) + data plane ${run.cpu.dataPlane.toFixed(1)} s ` +
          `(PostgreSQL CPU ratio, COPY into live + history / transaction: ${(shapedCpu / run.cpu.postgres).toFixed(2)})`,
      );
    }
    const s = (n: number) => `${n.toFixed(1)} s`;
    console.log(`CPU: COPY plain table PostgreSQL ${s(copyCpu)}; COPY live + history PostgreSQL ${s(shapedCpu)} (backends ${s(shapedBackendCpu)})`);
    console.log(`data plane MALLOC_MMAP_THRESHOLD_: ${MMAP_THRESHOLD || "unset (glibc's sliding threshold)"}`);
    if (!big) return console.log(`load average (1, 5, 15 min): before ${loadBefore}, after ${load()} (${cpus().length} CPUs)`);
    console.log(`CPU: transaction PostgreSQL ${s(big.cpu.postgres)} + data plane ${s(big.cpu.dataPlane)}`);
    console.log(`PostgreSQL CPU ratio (COPY / transaction): plain table ${(copyCpu / big.cpu.postgres).toFixed(2)}, live + history ${(shapedCpu / big.cpu.postgres).toFixed(2)}`);
    // A bound, not a measurement of the project: no load that writes what this one writes (the rows
    // into the live table and the history table with their indexes) can use less CPU than COPY
    // straight into them, nor finish sooner than all the CPU it needs spread over every core.
    const floorSeconds = (shapedCpu + big.cpu.dataPlane) / cpus().length;
    console.log(
      `bound on this machine: COPY into live + history (${s(shapedCpu)} of PostgreSQL CPU) + the data plane's decoding (${s(big.cpu.dataPlane)}) over ${cpus().length} CPUs ` +
        `is at least ${s(floorSeconds)}: a ratio to the plain-table COPY of at most ${(copySeconds / floorSeconds).toFixed(2)}`,
    );
    console.log(`load average (1, 5, 15 min): before ${loadBefore}, after ${load()} (${cpus().length} CPUs)`);
  } finally {
    child.child.kill('SIGTERM');
    await child.exited;
    await db.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
