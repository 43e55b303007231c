/**
 * The README's "Process environment" table, rendered from the data plane's declarations between
 * two markers. `npm run settings:readme` rewrites it; model/settings/settings.test.ts fails when
 * the README and the declarations differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderMarkdownTable } from './declare.js';
import { DATAPLANE_SETTINGS } from './dataplane.js';

export const README = resolve(import.meta.dirname, '../../README.md');
export const BEGIN = '<!-- settings table: generated from model/settings/dataplane.ts by `npm run settings:readme` -->';
export const END = '<!-- end of settings table -->';

/** The README with its table replaced by the one the declarations give. */
export function withSettingsTable(readme: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`README.md has no "${BEGIN}" … "${END}" markers`);
  return `${readme.slice(0, begin + BEGIN.length)}\n${renderMarkdownTable(DATAPLANE_SETTINGS)}\n${readme.slice(end)}`;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  writeFileSync(README, withSettingsTable(readFileSync(README, 'utf8')));
}
