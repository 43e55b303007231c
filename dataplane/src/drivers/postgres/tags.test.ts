/** The `tags` header as a SQL comment and an application_name: nothing in it can become SQL. */
import { expect } from 'chai';
import pg from 'pg';
import { freshDatabase } from '../../../test-support/postgres.js';
import type { StatementContext } from '../../engine/contract.js';
import { applicationName, tagComment } from './tags.js';

/**
 * Where the comment at the start of `text` ends, lexed the way PostgreSQL does: block comments
 * nest, so every `/*` opens a level and every `*\/` closes one. -1 when it never closes.
 */
function commentEnd(text: string): number {
  if (!text.startsWith('/*')) return -1;
  let depth = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const pair = text.slice(i, i + 2);
    if (pair === '/*') {
      depth++;
      i++;
    } else if (pair === '*/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

const HOSTILE: Record<string, unknown>[] = [
  { team: 'x*/ DROP TABLE y; /*' },
  { 'x*/ DROP TABLE y; --': 'key breaks out' },
  { nested: '/* /* */' },
  { nested: '*/*/*/' },
  { nested: '/*/' },
  { stars: '**//**//' },
  { line: 'a\nb\r\n-- c\n*/ SELECT 1' },
  { dash: '-- rest of line' },
  { nul: 'a\u0000b', bell: '\u0007' },
  { unicode: 'é✓😀\u2028\u2029', lone: '\ud800' },
  { long: '*/'.repeat(5000) },
  { n: 42, f: 1.5, t: true, none: null, list: ['*/', 1, { '/*': '*/' }], deep: { a: { b: '*/ DROP' } } },
];

describe('tags: SQL comment', () => {
  it('is empty without tags or executor', () => {
    expect(tagComment()).to.equal('');
    expect(tagComment({})).to.equal('');
  });

  it('is one /* … */ block followed by a space, holding the executor and tags as JSON', () => {
    const comment = tagComment({ executor: 'default', tags: { team: 'growth', n: 1 } });
    expect(comment).to.equal('/* {"executor":"default","tags":{"team":"growth","n":1}} */ ');
    expect(commentEnd(comment)).to.equal(comment.length - 1);
  });

  for (const tags of HOSTILE) {
    it(`cannot be closed early or left open: ${JSON.stringify(tags).slice(0, 60)}`, () => {
      const comment = tagComment({ tags });
      expect(commentEnd(comment), 'the comment ends exactly at its own */').to.equal(comment.length - 1);
      const body = comment.slice(2, -3);
      expect(body).to.not.contain('*/').and.not.contain('/*');
      expect(body, 'no raw line break or NUL').to.not.match(/[\r\n\u0000]/);
      expect(comment.endsWith(' */ ')).to.equal(true);
    });
  }

  it('keeps the tag text readable apart from the broken-up comment markers', () => {
    const comment = tagComment({ tags: { team: 'x*/ DROP TABLE y; /*' } });
    expect(comment).to.contain('"team":"x* / DROP TABLE y; / *"');
  });

  describe('in PostgreSQL', function () {
    this.timeout(60000);
    let db: pg.Client;
    before(async () => {
      db = new pg.Client(await freshDatabase());
      await db.connect();
      await db.query('CREATE TABLE y (v int)');
      await db.query('INSERT INTO y VALUES (7)');
    });
    after(async () => db?.end());

    it('runs the statement behind the comment and nothing else, for every hostile tag set', async () => {
      for (const tags of HOSTILE) {
        const ctx: StatementContext = { tags, executor: 'default' };
        // Extended protocol: one statement only, so a comment that broke out fails loudly here.
        const { rows } = await db.query({ text: `${tagComment(ctx)}SELECT v FROM y`, values: [] });
        expect(rows, JSON.stringify(tags).slice(0, 60)).to.deep.equal([{ v: 7 }]);
        // Simple protocol allows several statements: an escaped `; DROP TABLE` would run here.
        await db.query(`${tagComment(ctx)}SELECT v FROM y`);
        expect((await db.query('SELECT count(*)::int AS n FROM y')).rows[0].n).to.equal(1);
      }
    });

    it('shows the comment in the statement text PostgreSQL sees', async () => {
      const { rows } = await db.query({ text: `${tagComment({ tags: { team: 'x*/' } })}SELECT current_query() AS q`, values: [] });
      expect(rows[0].q).to.equal('/* {"tags":{"team":"x* /"}} */ SELECT current_query() AS q');
    });

    it('sets an application_name PostgreSQL keeps unchanged', async () => {
      for (const tags of HOSTILE) {
        const name = applicationName({ tags });
        await db.query("SELECT set_config('application_name', $1, false)", [name]);
        const { rows } = await db.query("SELECT current_setting('application_name') AS app");
        expect(rows[0].app).to.equal(name);
      }
    });
  });
});

describe('tags: application_name', () => {
  it('is data-access followed by the tags as JSON', () => {
    expect(applicationName({ tags: { team: 'growth' } })).to.equal('data-access {"team":"growth"}');
    expect(applicationName({})).to.equal('data-access {}');
  });

  it('is at most 63 bytes of printable ASCII, whatever the tags hold', () => {
    for (const tags of HOSTILE) {
      const name = applicationName({ tags });
      expect(Buffer.byteLength(name, 'utf8'), JSON.stringify(tags).slice(0, 60)).to.be.at.most(63);
      expect(name).to.match(/^data-access [\x20-\x7e]*$/);
    }
  });

  it('cuts long tags at 63 characters and replaces non-ASCII with ?', () => {
    const long = applicationName({ tags: { long: 'a'.repeat(200) } });
    expect(long).to.equal(`data-access {"long":"${'a'.repeat(63 - 'data-access {"long":"'.length)}`);
    expect(applicationName({ tags: { t: 'é😀' } })).to.equal('data-access {"t":"???"}');
  });
});
