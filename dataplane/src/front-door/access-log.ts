/**
 * The access-log line, one per response: `{"level":30,"time":…,<bindings>,"reqId":…,"method":…,
 * "path":…,"status":…,"ms":…,"msg":"request"}`, byte for byte what `logger.info({…}, 'request')`
 * writes, built as one string in a fixed shape and handed to the logger's stream.
 *
 * Why not `logger.info`: pino walks the object's keys, looks up serializers and stringifiers for
 * each and escapes each string on every line (with its call wrappers about 2% of a read's CPU).
 * The shape here is fixed, so only the values vary. The direct line is used only for a logger whose
 * output it reproduces (default formatters, no mixin, hooks, redaction, serializers of these keys,
 * nested key or message prefix, no stream asking for metadata, no `pino_asJson` subscriber);
 * any other logger gets `logger.info` as before. access-log.test.ts compares both outputs.
 */
import { tracingChannel } from 'node:diagnostics_channel';
import pino, { type Logger } from 'pino';

export interface AccessLogEntry {
  reqId: string;
  method: string | undefined;
  path: string;
  status: number;
  ms: number;
}

const INFO = 30;
const KEYS = ['reqId', 'method', 'path', 'status', 'ms'] as const;
const S = pino.symbols;
// pino traces its JSON building on this channel; a subscriber must see access lines too.
const asJsonChannel = tracingChannel('pino_asJson');

type PinoInternals = Record<symbol, unknown> & { levelVal: number };

/** Whether the direct line reproduces `logger.info`'s (checked once per logger). */
const plainLoggers = new WeakMap<Logger, boolean>();

function isPlain(logger: Logger): boolean {
  let plain = plainLoggers.get(logger);
  if (plain === undefined) {
    const l = logger as unknown as PinoInternals;
    const formatters = l[S.formattersSym] as { log?: unknown } | undefined;
    const hooks = l[S.hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
    const serializers = (l[S.serializersSym] ?? {}) as Record<string, unknown>;
    const stringifiers = (l[S.stringifiersSym] ?? {}) as Record<string | symbol, unknown>;
    const stream = l[S.streamSym] as Record<symbol, unknown> | undefined;
    plain =
      typeof (l[S.lsCacheSym] as Record<number, string> | undefined)?.[INFO] === 'string' &&
      typeof l[S.chindingsSym] === 'string' &&
      typeof l[S.timeSym] === 'function' &&
      typeof l[S.endSym] === 'string' &&
      !l[S.mixinSym] &&
      formatters !== undefined &&
      !formatters.log &&
      !hooks?.logMethod &&
      !hooks?.streamWrite &&
      Reflect.ownKeys(stringifiers).length === 0 &&
      !KEYS.some((k) => serializers[k]) &&
      !serializers.msg &&
      !l[S.nestedKeySym] &&
      !(logger as { msgPrefix?: string }).msgPrefix &&
      l[S.messageKeySym] === 'msg' &&
      stream !== undefined &&
      stream[S.needsMetadataGsym] !== true;
    plainLoggers.set(logger, plain);
  }
  return plain;
}

/** Writes the access-log line for one finished response (nothing below level info). */
export function writeAccessLog(logger: Logger, entry: AccessLogEntry): void {
  const l = logger as unknown as PinoInternals;
  if (l.levelVal > INFO) return;
  if (!isPlain(logger) || asJsonChannel.hasSubscribers) {
    logger.info({ reqId: entry.reqId, method: entry.method, path: entry.path, status: entry.status, ms: entry.ms }, 'request');
    return;
  }
  const line =
    (l[S.lsCacheSym] as Record<number, string>)[INFO] +
    (l[S.timeSym] as () => string)() +
    (l[S.chindingsSym] as string) +
    ',"reqId":' +
    JSON.stringify(entry.reqId) +
    (entry.method === undefined ? '' : ',"method":' + JSON.stringify(entry.method)) +
    ',"path":' +
    JSON.stringify(entry.path) +
    ',"status":' +
    number(entry.status) +
    ',"ms":' +
    milliseconds(entry.ms) +
    ',"msg":"request"' +
    (l[S.endSym] as string);
  (l[S.streamSym] as { write(s: string): void }).write(line);
}

/** As pino writes a number: a non-finite one as null. */
const number = (n: number) => (Number.isFinite(n) ? String(n) : 'null');

/**
 * As `number`, for a duration in milliseconds rounded to hundredths (as the exchange gives it):
 * written from the integer count of hundredths, which spares the shortest-decimal conversion of a
 * double on every line. Only when that count is exact; any other number goes through `number`.
 */
function milliseconds(ms: number): string {
  const hundredths = ms * 100;
  if (!Number.isInteger(hundredths) || hundredths < 0 || hundredths >= 1e12 || hundredths / 100 !== ms) return number(ms);
  const whole = Math.floor(hundredths / 100);
  const rest = hundredths - whole * 100;
  if (rest === 0) return String(whole);
  if (rest % 10 === 0) return whole + '.' + rest / 10;
  return whole + (rest < 10 ? '.0' : '.') + rest;
}
