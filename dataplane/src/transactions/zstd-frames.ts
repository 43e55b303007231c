/**
 * Walks the frames of a zstd stream as its bytes arrive (RFC 8878: frame headers, block headers,
 * checksums, skippable frames), before a decoder sees them: a frame whose window (the history a
 * decoder holds) is over the budget, that needs a dictionary, or whose block is larger than a
 * block may be, is refused here, so no decoder allocates what a hostile header declares.
 */
import { FormatError } from './parquet-bounds.js';

/** A block never regenerates (nor, compressed, takes) more than this (RFC 8878, Block_Maximum_Size). */
const MAX_BLOCK_BYTES = 128 * 1024;

interface Frame {
  window: number;
  checksum: boolean;
}

/** What the next bytes are: a fixed-size field gathered whole (at most 14 bytes), or bytes passed over. */
type State =
  | { at: 'magic' }
  | { at: 'frame-header'; length: number }
  | { at: 'skippable-size' }
  | { at: 'block-header'; frame: Frame }
  | { at: 'skip'; left: number; then: State; blockEnd?: boolean };

const MAGIC: State = { at: 'magic' };

export class ZstdFrameCheck {
  private state: State = MAGIC;
  private field: number[] = [];

  constructor(
    private readonly name: string,
    private readonly maxWindowBytes: number,
  ) {}

  /** Checks the next bytes of the stream; answers where in them a block (with its frame's checksum, if last) ends. */
  push(bytes: Uint8Array): number[] {
    const ends: number[] = [];
    let i = 0;
    while (i < bytes.length) {
      const s = this.state;
      if (s.at === 'skip') {
        const n = Math.min(s.left, bytes.length - i);
        i += n;
        s.left -= n;
        if (s.left === 0) {
          this.state = s.then;
          if (s.blockEnd) ends.push(i);
        }
        continue;
      }
      this.field.push(bytes[i++]);
      const f = this.field;
      if (s.at === 'frame-header' && f.length === 1) {
        s.length = headerLength(f[0]); // the descriptor says how long the rest is
        continue;
      }
      if (s.at === 'magic' && f.length === 4) this.state = this.onMagic(f);
      else if (s.at === 'frame-header' && f.length === s.length) this.state = this.onFrameHeader(f);
      else if (s.at === 'skippable-size' && f.length === 4) this.state = skip(le(f), MAGIC);
      else if (s.at === 'block-header' && f.length === 3) {
        this.state = this.onBlockHeader(le(f), s.frame);
        if (this.state.at !== 'skip') ends.push(i); // an empty block: it ends with its header
      } else continue;
      this.field = [];
    }
    return ends;
  }

  /** At the end of the stream: a frame cut short is refused. */
  end(): void {
    if (this.state !== MAGIC || this.field.length) throw this.invalid('it ends in the middle of a frame: the file is truncated');
  }

  private invalid(why: string): FormatError {
    return new FormatError(`${this.name}: the zstd stream is not valid (${why})`);
  }

  private onMagic([a, b, c, d]: number[]): State {
    if (a === 0x28 && b === 0xb5 && c === 0x2f && d === 0xfd) return { at: 'frame-header', length: 1 };
    if ((a & 0xf0) === 0x50 && b === 0x2a && c === 0x4d && d === 0x18) return { at: 'skippable-size' };
    throw this.invalid(`bytes ${[a, b, c, d].map((x) => x.toString(16).padStart(2, '0')).join(' ')} where a frame begins`);
  }

  private onFrameHeader(h: number[]): State {
    const descriptor = h[0];
    if (descriptor & 0x08) throw this.invalid('a reserved bit of a frame header is set');
    const singleSegment = (descriptor >> 5) & 1;
    let at = 1;
    let window = 0;
    if (!singleSegment) {
      const w = h[at++];
      const base = 2 ** (10 + (w >> 3));
      window = base + (base / 8) * (w & 7);
    }
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3];
    const dictionary = le(h.slice(at, (at += dictionaryBytes)));
    if (dictionary !== 0) throw this.invalid(`a frame needs dictionary ${dictionary}, and none is given`);
    const sizeBytes = [singleSegment, 2, 4, 8][descriptor >> 6];
    const size = le(h.slice(at, at + sizeBytes)) + (sizeBytes === 2 ? 256 : 0);
    if (singleSegment) window = size;
    if (window > this.maxWindowBytes)
      throw new FormatError(`${this.name}: a zstd frame needs a window of ${window} bytes, more than DAS_BULK_MAX_ZSTD_WINDOW_BYTES (${this.maxWindowBytes})`);
    return { at: 'block-header', frame: { window, checksum: ((descriptor >> 2) & 1) === 1 } };
  }

  private onBlockHeader(header: number, frame: Frame): State {
    const last = header & 1;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) throw this.invalid('a block of the reserved type');
    if (size > Math.min(MAX_BLOCK_BYTES, Math.max(frame.window, 1))) throw this.invalid(`a block of ${size} bytes, more than a block may hold`);
    const body = type === 1 ? 1 : size; // an RLE block holds its one byte
    if (!last) return skip(body, { at: 'block-header', frame }, true);
    return skip(body + (frame.checksum ? 4 : 0), MAGIC, true);
  }
}

const skip = (left: number, then: State, blockEnd = false): State => (left > 0 ? { at: 'skip', left, then, ...(blockEnd ? { blockEnd } : {}) } : then);

/** A little-endian unsigned number (up to 8 bytes; exact to 2^53). */
function le(bytes: number[]): number {
  return bytes.reduce((n, b, k) => n + b * 2 ** (8 * k), 0);
}

/** Bytes of a frame header after the magic number, from its first byte (the frame header descriptor). */
function headerLength(descriptor: number): number {
  const singleSegment = (descriptor >> 5) & 1;
  return 1 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3] + [singleSegment, 2, 4, 8][descriptor >> 6];
}
