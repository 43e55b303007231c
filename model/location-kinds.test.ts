/** The per-kind facts table, and that location rules come from it rather than from kind names. */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { LOCATION_KIND_FACTS, refusedConsistency } from './location-kinds.js';
import { DEFAULT_CONSISTENCY } from './render.js';
import { CONSISTENCY_LEVELS, LOCATION_KINDS } from './types.js';

const ROOT = resolve(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('location kinds (model/location-kinds.ts)', () => {
  it('has the facts of every kind, each default among the levels the kind accepts', () => {
    expect(Object.keys(LOCATION_KIND_FACTS)).to.have.members([...LOCATION_KINDS]);
    for (const [kind, facts] of Object.entries(LOCATION_KIND_FACTS)) {
      expect(facts.consistency, kind).to.include(facts.defaultConsistency);
      for (const level of facts.consistency) expect(CONSISTENCY_LEVELS, kind).to.include(level);
      expect(DEFAULT_CONSISTENCY[kind as keyof typeof DEFAULT_CONSISTENCY]).to.equal(facts.defaultConsistency);
    }
    // The spec's table: QUORUM is DynamoDB's default, ATOMIC the SQL kinds'.
    expect(DEFAULT_CONSISTENCY).to.deep.equal({ postgres: 'ATOMIC', snowflake: 'ATOMIC', iceberg: 'ATOMIC', dynamodb: 'QUORUM' });
  });

  it('refuses ATOMIC_ALL on iceberg only, saying why', () => {
    expect(refusedConsistency('iceberg', 'ATOMIC_ALL')).to.contain('per table');
    expect(refusedConsistency('iceberg', 'ATOMIC')).to.equal(undefined);
    for (const kind of ['postgres', 'snowflake', 'dynamodb'] as const) for (const level of CONSISTENCY_LEVELS) expect(refusedConsistency(kind, level)).to.equal(undefined);
  });

  it('is where kind rules live: no code outside a driver compares a location kind with a kind name', () => {
    const comparison = /(?:[!=]==\s*'(?:postgres|snowflake|iceberg|dynamodb)'|'(?:postgres|snowflake|iceberg|dynamodb)'\s*[!=]==)/;
    const offenders = [...sources(join(ROOT, 'model')), ...sources(join(ROOT, 'operator/src')), ...sources(join(ROOT, 'dataplane/src'))]
      .filter((file) => !relative(ROOT, file).startsWith('dataplane/src/drivers/'))
      .filter((file) => comparison.test(readFileSync(file, 'utf8')))
      .map((file) => relative(ROOT, file));
    expect(offenders).to.deep.equal([]);
    expect(comparison.test("if (dataset.location.kind === 'iceberg')"), 'the pattern finds such a check').to.equal(true);
  });
});
