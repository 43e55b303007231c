/**
 * Writes the CRDs to crds/ and charts/data-access-operator/crds/:
 *   npx tsx operator/src/generate-crds.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crdFiles } from './crds.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CRD_DIRECTORIES = ['crds', join('charts', 'data-access-operator', 'crds')];

for (const directory of CRD_DIRECTORIES) {
  mkdirSync(join(REPO_ROOT, directory), { recursive: true });
  for (const [file, content] of Object.entries(crdFiles())) {
    writeFileSync(join(REPO_ROOT, directory, file), content);
    process.stdout.write(`wrote ${join(directory, file)}\n`);
  }
}
