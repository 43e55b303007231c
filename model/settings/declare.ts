/**
 * The declaration machinery of the process settings (environment variables). Each program lists its
 * variables once (model/settings/dataplane.ts, model/settings/operator.ts) as `NAME: kind(…)`; the
 * list is parsed once at start-up into typed values, and `--help` and the README's table are
 * rendered from it. Pure functions: the entry points hand in `process.env` and decide what to do
 * with the outcome (docs/architecture.md, "Settings").
 */

/** Who reads a variable: the data plane, its function-gateway mode, the operator, a CLI, or a library it loads. */
export type Reader = 'dataplane' | 'function-gateway' | 'operator' | 'token-cli' | 'library';

export interface Setting<T> {
  /** What the value may be, for messages and the table ("a whole number from 1 to 8"). */
  readonly allowed: string;
  /** The value when the variable is unset or empty. */
  readonly fallback: T;
  /** The default as shown in `--help` and the table (when it is not simply the fallback). */
  readonly shownDefault: string;
  readonly description: string;
  readonly readers: readonly Reader[];
  /** Its value is a credential: never echoed in a message. */
  readonly secret: boolean;
  /** The value of a set variable, or `undefined` when it is not allowed. */
  parse(raw: string): T | undefined;
}

/** What every declaration takes besides its kind's own terms. */
export interface About {
  description: string;
  readers: readonly Reader[];
  /** The default as a reader should see it, when it is derived (e.g. "DATA_DIR/secrets"). */
  shownDefault?: string;
  secret?: boolean;
}

function setting<T>(about: About, allowed: string, fallback: T, shown: string, parse: (raw: string) => T | undefined): Setting<T> {
  return { allowed, fallback, shownDefault: about.shownDefault ?? shown, description: about.description, readers: about.readers, secret: about.secret ?? false, parse };
}

const range = (min: number, max: number | undefined) => (max === undefined ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`);

/** A whole number within [min, max]. */
export function wholeNumber(fallback: number, limits: { min: number; max?: number }, about: About): Setting<number> {
  return setting(about, range(limits.min, limits.max), fallback, String(fallback), (raw) => {
    const value = Number(raw);
    return /^\s*\d+\s*$/.test(raw) && Number.isSafeInteger(value) && value >= limits.min && (limits.max === undefined || value <= limits.max) ? value : undefined;
  });
}

/** A whole number within [min, max], or undefined when unset (the reader derives its default). */
export function optionalWholeNumber(limits: { min: number; max?: number }, about: About & { shownDefault: string }): Setting<number | undefined> {
  const whole = wholeNumber(0, limits, about);
  return setting(about, whole.allowed, undefined, about.shownDefault, (raw) => whole.parse(raw));
}

/** A number of seconds (fractions allowed) within [min, max], read as milliseconds. */
export function seconds(fallbackSeconds: number | undefined, limits: { min: number; max: number }, about: About): Setting<number | undefined> {
  return setting(about, `a number of seconds from ${limits.min} to ${limits.max}`, fallbackSeconds === undefined ? undefined : fallbackSeconds * 1000, String(fallbackSeconds ?? '—'), (raw) => {
    const value = Number(raw);
    return raw.trim() !== '' && Number.isFinite(value) && value >= limits.min && value <= limits.max ? Math.round(value * 1000) : undefined;
  });
}

/** One of a fixed list of words. */
export function choice<const C extends string>(choices: readonly C[], fallback: C, about: About): Setting<C> {
  return setting(about, `one of ${choices.join(', ')}`, fallback, fallback, (raw) => (choices.includes(raw.trim() as C) ? (raw.trim() as C) : undefined));
}

/** true or false. */
export function flag(fallback: boolean | undefined, about: About): Setting<boolean | undefined> {
  return setting(about, 'true or false', fallback, fallback === undefined ? '—' : String(fallback), (raw) => (raw.trim() === 'true' ? true : raw.trim() === 'false' ? false : undefined));
}

/** Any text; `fallback` when unset or empty. */
export function text(fallback: string, about: About): Setting<string>;
export function text(fallback: undefined, about: About): Setting<string | undefined>;
export function text(fallback: string | undefined, about: About): Setting<string | undefined> {
  return setting(about, 'any text', fallback, fallback ?? '—', (raw) => raw);
}

/** Any text that passes `check` (which says what is wrong, or nothing). */
export function checkedText(allowed: string, check: (raw: string) => boolean, about: About): Setting<string | undefined> {
  return setting(about, allowed, undefined, '—', (raw) => (check(raw) ? raw : undefined));
}

/** A comma-separated list of items that each pass `item` (returning the normalised item, or undefined). */
export function list(allowed: string, item: (raw: string) => string | undefined, about: About): Setting<string[]> {
  return setting(about, allowed, [], '—', (raw) => {
    const items = raw.split(',').map((s) => s.trim()).filter(Boolean).map(item);
    return items.every((i): i is string => i !== undefined) ? items : undefined;
  });
}

export type Declarations = Record<string, Setting<unknown>>;

/** The typed values of a list of declarations: `SettingsOf<typeof DATAPLANE_SETTINGS>['PORT']` is a number. */
export type SettingsOf<D extends Declarations> = { readonly [K in keyof D]: D[K] extends Setting<infer T> ? T : never };

/** A bad value: one line naming the variable, the value and what is allowed. */
export class SettingError extends Error {
  override readonly name = 'SettingError';
}

/** Parses every declared variable of `env` (unset or empty: the default); the first bad value is a SettingError. */
export function parseSettings<D extends Declarations>(declarations: D, env: Readonly<Record<string, string | undefined>>): SettingsOf<D> {
  const values: Record<string, unknown> = {};
  for (const [name, declared] of Object.entries(declarations)) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') {
      values[name] = declared.fallback;
      continue;
    }
    const value = declared.parse(raw);
    if (value === undefined) {
      const shown = declared.secret ? '(a value, not shown)' : JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw);
      throw new SettingError(`${name}=${shown} is not allowed: ${declared.allowed}`);
    }
    values[name] = value;
  }
  return values as SettingsOf<D>;
}

/** Edit distance (insertions, deletions, substitutions), for "did you mean". */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}

/** One warning per set variable with the prefix that no declaration names, with the closest declared name. */
export function unknownSettings(declarations: Declarations, env: Readonly<Record<string, string | undefined>>, prefix = 'DAS_'): string[] {
  const known = Object.keys(declarations);
  return Object.keys(env)
    .filter((name) => name.startsWith(prefix) && !(name in declarations))
    .sort()
    .map((name) => {
      const closest = known.reduce((best, candidate) => (editDistance(name, candidate) < editDistance(name, best) ? candidate : best), known[0]);
      return `${name} is not a setting of this program (ignored); did you mean ${closest}?`;
    });
}

/** The variables a program reads, as `--help` lists them. */
export function renderUsage(declarations: Declarations, reader: Reader): string {
  const rows = Object.entries(declarations).filter(([, d]) => d.readers.includes(reader));
  return rows
    .map(([name, d]) => {
      const allowed = d.allowed === 'any text' ? '' : ` [${d.allowed}]`;
      return `  ${name} (${d.shownDefault})${allowed}\n      ${d.description}`;
    })
    .join('\n');
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** The README's table: one row per variable. */
export function renderMarkdownTable(declarations: Declarations): string {
  const rows = Object.entries(declarations).map(([name, d]) => {
    const allowed = d.allowed === 'any text' ? '' : `; ${d.allowed}`;
    return `| \`${name}\` | ${cell(d.shownDefault === '—' ? '—' : `\`${d.shownDefault}\``)} | ${cell(d.readers.join(', '))} | ${cell(d.description)}${cell(allowed)} |`;
  });
  return ['| variable | default | read by | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
