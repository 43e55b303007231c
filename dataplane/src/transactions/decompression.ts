/**
 * The text of a CSV or NDJSON file as it arrives, decompressed when its first bytes say it is
 * gzip (1f 8b) or zstd (28 b5 2f fd), whatever its name: a `.gz` name holding plain text is read
 * as it is. Streamed, a piece at a time; what a file decompresses to is bounded by
 * DAS_BULK_MAX_DECOMPRESSED_BYTES and, past its first MiB, by DAS_BULK_MAX_COMPRESSION_RATIO
 * times the compressed bytes read, so a bomb fails its load without being held or read to its end.
 */
import { Readable, pipeline } from 'node:stream';
import * as zlib from 'node:zlib';
import { Decompress } from 'fzstd';
import type { FileLimits } from './limits.js';
import { FormatError } from './parquet-bounds.js';
import { ZstdFrameCheck } from './zstd-frames.js';

export type Compression = 'gzip' | 'zstd';

export interface TextBytes {
  /** The file's bytes, decompressed. */
  chunks: AsyncIterable<Buffer>;
  /** How the file is compressed (undefined: plain), known once the first bytes were read. */
  compression(): Compression | undefined;
  /** Bytes of the file as stored read so far. */
  storedBytes(): number;
}

/** Output allowed whatever the ratio (a small file's header may well compress 500:1). */
const RATIO_FLOOR_BYTES = 1024 * 1024;

export function detectCompression(head: Uint8Array): Compression | undefined {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.length >= 4 && head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd';
  return undefined;
}

export function textBytes(source: AsyncIterable<Buffer | string>, name: string, limits: FileLimits): TextBytes {
  let stored = 0;
  let kind: Compression | undefined;
  async function* raw(): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      stored += buf.length;
      yield buf;
    }
  }
  async function* all(): AsyncGenerator<Buffer> {
    const it = raw();
    // The first bytes say what the file is (at most 4 are needed; a first chunk is almost always more).
    const head: Buffer[] = [];
    let headBytes = 0;
    for (let next = await it.next(); ; next = await it.next()) {
      if (next.done) break;
      head.push(next.value);
      headBytes += next.value.length;
      if (headBytes >= 4) break;
    }
    const first = Buffer.concat(head, headBytes);
    kind = detectCompression(first);
    async function* input(): AsyncGenerator<Buffer> {
      if (first.length) yield first;
      for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
    }
    if (!kind) return yield* input();
    let produced = 0;
    const count = (bytes: number) => {
      produced += bytes;
      if (produced > limits.maxDecompressedBytes)
        throw new FormatError(`${name} decompresses (${kind}) to more than DAS_BULK_MAX_DECOMPRESSED_BYTES (${limits.maxDecompressedBytes} bytes); the load stops`);
      if (produced > RATIO_FLOOR_BYTES && produced > limits.maxCompressionRatio * stored)
        throw new FormatError(
          `${name} decompresses (${kind}) to more than DAS_BULK_MAX_COMPRESSION_RATIO (${limits.maxCompressionRatio}) times its size: ${produced} bytes from the first ${stored}; the load stops`,
        );
    };
    const decoded = kind === 'gzip' ? viaZlib(input(), zlib.createGunzip(), name, 'gzip') : zstd(input(), name, limits);
    for await (const chunk of decoded) {
      count(chunk.length);
      yield chunk;
    }
  }
  return { chunks: all(), compression: () => kind, storedBytes: () => stored };
}

/**
 * A zstd stream: its frames checked first (zstd-frames.ts), then decoded by fzstd, a block at a
 * time. Not node:zlib's zstd (Node ≥ 22.15): it stops at the end of the first frame, and files
 * of concatenated frames (`cat a.zst b.zst`, zstd -T multi-threaded output) must read to the end.
 */
async function* zstd(input: AsyncIterable<Buffer>, name: string, limits: FileLimits): AsyncGenerator<Buffer> {
  const frames = new ZstdFrameCheck(name, limits.maxZstdWindowBytes);
  const blockEnds = new WeakMap<Buffer, number[]>();
  async function* checked(): AsyncGenerator<Buffer> {
    for await (const chunk of input) {
      blockEnds.set(chunk, frames.push(chunk));
      yield chunk;
    }
    frames.end();
  }
  const out: Uint8Array[] = [];
  const decoder = new Decompress((chunk) => void out.push(chunk));
  const decode = (piece: Uint8Array, final: boolean) => {
    try {
      decoder.push(piece, final);
    } catch (err) {
      throw new FormatError(`${name}: the zstd stream is not valid (${(err as Error).message})`);
    }
  };
  for await (const chunk of checked()) {
    // Pushed a block at a time (a piece of the chunk ends where a block ends), so that the decoder
    // regenerates at most one block (128 KiB) before it is counted against the budgets.
    let at = 0;
    for (const end of [...blockEnds.get(chunk)!, chunk.length]) {
      if (end > at) decode(chunk.subarray(at, end), false);
      at = end;
      for (let block = out.shift(); block; block = out.shift()) if (block.byteLength) yield Buffer.from(block.buffer, block.byteOffset, block.byteLength);
    }
  }
  decode(new Uint8Array(0), true);
  for (let block = out.shift(); block; block = out.shift()) if (block.byteLength) yield Buffer.from(block.buffer, block.byteOffset, block.byteLength);
}

/** Bytes through a node:zlib decompressor; its errors (a truncated or corrupt stream) name the file, the source's own errors pass as they are. */
async function* viaZlib(input: AsyncIterable<Buffer>, decompressor: zlib.Gunzip, name: string, kind: Compression): AsyncGenerator<Buffer> {
  let sourceError: unknown;
  // Only what reading the source throws is the source's (the pipeline throws the decompressor's errors into this generator too).
  async function* watched(): AsyncGenerator<Buffer> {
    const it = input[Symbol.asyncIterator]();
    try {
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await it.next();
        } catch (err) {
          sourceError = err;
          throw err;
        }
        if (next.done) return;
        yield next.value;
      }
    } finally {
      void it.return?.()?.catch?.(() => undefined);
    }
  }
  const out = pipeline(Readable.from(watched()), decompressor, () => undefined);
  try {
    for await (const chunk of out as AsyncIterable<Buffer>) yield chunk;
  } catch (err) {
    if (sourceError !== undefined || err instanceof FormatError) throw sourceError ?? err;
    const message = (err as { code?: string }).code === 'Z_BUF_ERROR' ? 'it ends in the middle of the stream: the file is truncated' : (err as Error).message;
    throw new FormatError(`${name}: the ${kind} stream is not valid (${message})`);
  } finally {
    out.destroy();
  }
}
