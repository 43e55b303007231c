import { expect } from 'chai';
import { jsonDepth } from './body.js';

/** The definition, one character at a time: a backslash inside a string escapes the next character. */
function depthByCharacter(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ']' || c === '}') depth--;
  }
  return max;
}

describe('JSON nesting depth (http/body.ts jsonDepth)', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(jsonDepth('{"a": [1, {"b": [[]]}]}')).to.equal(5);
    expect(jsonDepth('{"query": "{ a { b { c { d } } } }", "variables": {"x": "[[[["}}')).to.equal(2);
    expect(jsonDepth('"[{[{"')).to.equal(0);
    expect(jsonDepth('[]')).to.equal(1);
  });

  it('ends a string only at a quote not escaped by an odd run of backslashes', () => {
    expect(jsonDepth('["\\"[[[", []]')).to.equal(2); // \" inside: the string goes on past it
    expect(jsonDepth('["a\\\\", [[]]]')).to.equal(3); // \\ then the closing quote
    expect(jsonDepth('["\\\\\\"[[", [[]]]')).to.equal(3); // \\\" : still inside
    expect(jsonDepth('["\\\\\\\\", [[]]]')).to.equal(3); // \\\\ then the closing quote
  });

  it('treats an unterminated string as running to the end', () => {
    expect(jsonDepth('[["abc [[[[')).to.equal(2);
    expect(jsonDepth('[["abc\\"')).to.equal(2);
    expect(jsonDepth('[["abc\\')).to.equal(2);
  });

  it('stops once past the limit', () => {
    expect(jsonDepth('['.repeat(100_000), 64)).to.equal(65);
    expect(jsonDepth(`{"a": "${'['.repeat(1000)}"}`, 64)).to.equal(1);
  });

  it('agrees with the character-by-character definition on generated texts', () => {
    const alphabet = ['"', '\\', '[', ']', '{', '}', 'a', ',', ':', ' '];
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 20_000; round++) {
      let text = '';
      const length = random(40);
      for (let i = 0; i < length; i++) text += alphabet[random(alphabet.length)];
      expect(jsonDepth(text), text).to.equal(depthByCharacter(text));
    }
  });
});
