/**
 * docs/architecture.md "Layering": model/ is the only code the operator and the data plane share. The operator
 * never imports dataplane/, and model/ imports neither of them.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/** The module specifiers of every static import/export-from, side-effect import and dynamic import(). */
export function importedSpecifiers(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file: specifier` for every import of a file under `from` that resolves into one of the `forbidden` top-level directories. */
function violations(from: string, forbidden: string[]): string[] {
  // This file's own examples below are strings, not imports.
  const files = tsFiles(join(ROOT, from)).filter((file) => file !== resolve(import.meta.filename));
  return files.flatMap((file) =>
    importedSpecifiers(readFileSync(file, 'utf8'))
      .filter((specifier) => {
        if (!specifier.startsWith('.')) return false;
        const top = relative(ROOT, resolve(dirname(file), specifier)).split(sep)[0];
        return forbidden.includes(top);
      })
      .map((specifier) => `${relative(ROOT, file)}: ${specifier}`),
  );
}

describe('layering (docs/architecture.md): model/ is all the operator and the data plane share', () => {
  it('finds every form of import (so that the checks below can fail)', () => {
    const source = [
      "import { a } from '../../dataplane/src/a.js';",
      "import type { B } from \"../dataplane/b.js\";",
      "export { c } from '../dataplane/c.js';",
      "export * from '../dataplane/d.js';",
      "import '../dataplane/e.js';",
      "const f = await import('../dataplane/f.js');",
      'import {\n  g,\n  h,\n} from "../dataplane/g.js";',
    ].join('\n');
    expect(importedSpecifiers(source)).to.have.members([
      '../../dataplane/src/a.js',
      '../dataplane/b.js',
      '../dataplane/c.js',
      '../dataplane/d.js',
      '../dataplane/e.js',
      '../dataplane/f.js',
      '../dataplane/g.js',
    ]);
  });

  it('the operator (sources, tests and benchmarks) imports nothing from dataplane/', () => {
    expect(tsFiles(join(ROOT, 'operator')).length).to.be.greaterThan(10);
    expect(violations('operator', ['dataplane'])).to.deep.equal([]);
  });

  it('model/ imports nothing from operator/ or dataplane/', () => {
    expect(tsFiles(join(ROOT, 'model')).length).to.be.greaterThan(3);
    expect(violations('model', ['operator', 'dataplane'])).to.deep.equal([]);
  });
});

/** `file: specifier` for imports of non-test files under `from` that resolve under any `forbidden` path (relative to the root). */
function importsInto(from: string, forbidden: string[], allowed: string[] = []): string[] {
  const files = tsFiles(join(ROOT, from)).filter((file) => !file.endsWith('.test.ts'));
  return files.flatMap((file) =>
    importedSpecifiers(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .filter((specifier) => {
        const target = relative(ROOT, resolve(dirname(file), specifier)).split(sep).join('/');
        return forbidden.some((f) => target === f || target.startsWith(`${f}/`)) && !allowed.includes(target);
      })
      .map((specifier) => `${relative(ROOT, file)}: ${specifier}`),
  );
}

describe('layering (docs/architecture.md): the engine owns the driver contract', () => {
  it('the engine imports no driver (it owns the contract drivers implement)', () => {
    expect(tsFiles(join(ROOT, 'dataplane/src/engine')).length).to.be.greaterThan(5);
    expect(importsInto('dataplane/src/engine', ['dataplane/src/drivers'])).to.deep.equal([]);
  });

  it('drivers speak in store outcomes: no API errors, no HTTP, no front doors', () => {
    expect(tsFiles(join(ROOT, 'dataplane/src/drivers')).length).to.be.greaterThan(5);
    const forbidden = ['dataplane/src/engine/errors.js', 'dataplane/src/engine/store-outcomes.js', 'dataplane/src/engine/engine.js', 'dataplane/src/http', 'dataplane/src/rawsql', 'dataplane/src/function-gateway'];
    expect(importsInto('dataplane/src/drivers', forbidden)).to.deep.equal([]);
  });

  it('finds such an import when there is one (so that the checks above can fail)', () => {
    const source = "import { ApiError } from '../../engine/errors.js';";
    const target = relative(ROOT, resolve(join(ROOT, 'dataplane/src/drivers/postgres'), importedSpecifiers(source)[0])).split(sep).join('/');
    expect(target).to.equal('dataplane/src/engine/errors.js');
  });
});

describe('layering: snowflake-sdk is loaded in one place, with platform detection off', () => {
  it('nothing but drivers/snowflake/sdk.ts imports snowflake-sdk (it probes cloud metadata when loaded otherwise)', () => {
    const files = ['dataplane', 'operator', 'e2e', 'bench', 'model'].flatMap((dir) => tsFiles(join(ROOT, dir)));
    const importers = files
      .filter((file) => file !== resolve(import.meta.filename))
      .filter((file) => importedSpecifiers(readFileSync(file, 'utf8')).some((s) => s === 'snowflake-sdk' || s.startsWith('snowflake-sdk/')))
      .map((file) => relative(ROOT, file).split(sep).join('/'));
    // The loader's own test reads the SDK's detection result, after loading it through the loader.
    expect(importers).to.deep.equal(['dataplane/src/drivers/snowflake/sdk.test.ts', 'dataplane/src/drivers/snowflake/sdk.ts']);
  });
});

/** The folder of dataplane/src a file is in (`engine`, `http`, … ; a top-level file is `(root)`). */
function folderOf(file: string): string {
  const parts = relative(join(ROOT, 'dataplane/src'), file).split(sep);
  return parts.length > 1 ? parts[0] : '(root)';
}

/** folder → the folders its product files import (tests left out: they may reach across to test). */
function folderImports(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of tsFiles(join(ROOT, 'dataplane/src')).filter((f) => !f.endsWith('.test.ts'))) {
    const from = folderOf(file);
    for (const specifier of importedSpecifiers(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      if (!target.startsWith(join(ROOT, 'dataplane/src') + sep)) continue;
      const to = folderOf(target);
      if (to !== from && to !== '(root)' && from !== '(root)') (graph.get(from) ?? graph.set(from, new Set()).get(from)!).add(to);
    }
  }
  return graph;
}

/** A loop of folders, as `a -> b -> a`, or undefined. */
export function findLoop(graph: Map<string, Set<string>>): string | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string | undefined => {
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' -> ');
    if (state.get(node) === 'done') return undefined;
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const loop = visit(next);
      if (loop) return loop;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const loop = visit(node);
    if (loop) return loop;
  }
  return undefined;
}

describe('layering (docs/architecture.md): folders of dataplane/src', () => {
  it('no loop between the folders of dataplane/src', () => {
    const graph = folderImports();
    expect(graph.size).to.be.greaterThan(5);
    expect(findLoop(graph)).to.equal(undefined);
  });

  it('finds a loop when there is one (so that the check above can fail)', () => {
    expect(findLoop(new Map([['http', new Set(['graphql'])], ['graphql', new Set(['http'])]]))).to.equal('http -> graphql -> http');
    expect(findLoop(new Map([['http', new Set(['engine'])], ['engine', new Set<string>()]]))).to.equal(undefined);
  });

  it('the engine imports nothing above it: no front door, transactions/, front-door/ or driver', () => {
    const above = ['http', 'graphql', 'function-gateway', 'admin', 'rawsql', 'transactions', 'front-door', 'drivers', 'auth', 'firewall'].map((f) => `dataplane/src/${f}`);
    expect(importsInto('dataplane/src/engine', above)).to.deep.equal([]);
  });

  it('front doors do not import each other (http/ hosts GraphQL over HTTP and the raw SQL endpoint)', () => {
    const graph = folderImports();
    const doors = ['http', 'graphql', 'function-gateway', 'admin', 'rawsql', 'transactions'];
    const crossings = doors.flatMap((from) => [...(graph.get(from) ?? [])].filter((to) => doors.includes(to)).map((to) => `${from} -> ${to}`));
    expect(crossings.sort()).to.deep.equal(['http -> graphql', 'http -> rawsql', 'http -> transactions']);
  });

  it('front doors and front-door/ reach stores only through the engine: no driver; front-door/ imports no front door', () => {
    const graph = folderImports();
    const doors = ['http', 'graphql', 'function-gateway', 'admin', 'rawsql', 'transactions'];
    const crossings = [...doors, 'front-door'].flatMap((from) => [...(graph.get(from) ?? [])].filter((to) => to === 'drivers' || (from === 'front-door' && doors.includes(to))).map((to) => `${from} -> ${to}`));
    expect(crossings).to.deep.equal([]);
  });

  it('nothing under dataplane/src imports a test helper (dataplane/test-support/, e2e/) outside tests', () => {
    const product = tsFiles(join(ROOT, 'dataplane/src')).filter((f) => !f.endsWith('.test.ts'));
    const found = product.flatMap((file) =>
      importedSpecifiers(readFileSync(file, 'utf8'))
        .filter((s) => s.startsWith('.') && /\/(test-support|e2e)\/|\.test-support\.js$|test-fixtures/.test(relative(ROOT, resolve(dirname(file), s)).split(sep).join('/') + '/'))
        .map((s) => `${relative(ROOT, file)}: ${s}`),
    );
    expect(found).to.deep.equal([]);
  });

  it('only the entry points read process.env (modules receive typed settings: model/settings/)', () => {
    const files = ['dataplane/src', 'operator/src', 'model'].flatMap((dir) => tsFiles(join(ROOT, dir))).filter((f) => !f.endsWith('.test.ts'));
    const readers = files.filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''))).map((file) => relative(ROOT, file).split(sep).join('/'));
    expect(readers.sort()).to.deep.equal(['dataplane/src/auth/token-cli.ts', 'dataplane/src/drivers/snowflake/sdk.ts', 'dataplane/src/main.ts', 'operator/src/main.ts']);
  });
});
