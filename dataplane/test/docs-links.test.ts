/**
 * Every relative link in README.md and docs/*.md leads somewhere: the file exists and, for a
 * `#anchor`, a heading of that file has that anchor (GitHub's rule: lower case, punctuation other
 * than `-` and `_` dropped, spaces to `-`, repeats numbered -1, -2…) or an explicit `<a id>`.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../test-support/main-process.js';

/** The text outside fenced code blocks (links in code are examples, not links). */
function prose(markdown: string): string {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const text = heading[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
      const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count ? `${slug}-${count}` : slug);
    }
    for (const explicit of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(explicit[1]);
  }
  return anchors;
}

function linksOf(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

const documents = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join(ROOT, 'docs', f))];

describe('documentation links (README.md, docs/*.md)', () => {
  it('anchors follow GitHub’s rule', () => {
    expect([...anchorsOf('# Every location (`BENCH_LOCATION`, `bench:subscriptions:locations`)\n## A\n## A')]).to.deep.equal([
      'every-location-bench_location-benchsubscriptionslocations',
      'a',
      'a-1',
    ]);
  });

  it('every relative link names an existing file, and every anchor a heading of it', () => {
    const broken: string[] = [];
    for (const document of documents) {
      for (const link of linksOf(readFileSync(document, 'utf8'))) {
        const [path, anchor] = link.split('#', 2) as [string, string | undefined];
        const target = path ? resolve(dirname(document), decodeURIComponent(path)) : document;
        const where = `${relative(ROOT, document)}: (${link})`;
        if (!existsSync(target)) {
          broken.push(`${where} — no file ${relative(ROOT, target)}`);
          continue;
        }
        if (anchor && target.endsWith('.md') && statSync(target).isFile() && !anchorsOf(readFileSync(target, 'utf8')).has(decodeURIComponent(anchor))) {
          broken.push(`${where} — no heading with anchor #${anchor} in ${relative(ROOT, target)}`);
        }
      }
    }
    expect(broken, broken.join('\n')).to.deep.equal([]);
  });
});
