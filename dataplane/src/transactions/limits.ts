/**
 * The budgets a bulk-load file is read within (DAS_BULK_*): every size or count a file declares
 * (a Parquet footer's length, a row group's rows and byte ranges, a page's sizes and values, a
 * line's length) is checked against the bytes that exist and these before anything is allocated
 * for it. A file over a budget fails its load with a message naming the budget and its setting.
 */

import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../../model/settings/dataplane.js';

export interface FileLimits {
  /** Longest NDJSON line or CSV record, in bytes (DAS_BULK_MAX_ROW_BYTES). */
  maxRowBytes: number;
  /** Largest Parquet footer (file metadata), in bytes (DAS_BULK_MAX_FOOTER_BYTES). */
  maxFooterBytes: number;
  /** Most rows in one Parquet row group (DAS_BULK_MAX_GROUP_ROWS). */
  maxGroupRows: number;
  /** Most values (rows × columns) decoded from one row group at once (DAS_BULK_MAX_GROUP_VALUES). */
  maxGroupValues: number;
  /** Most bytes of one row group read from the source at once (DAS_BULK_MAX_GROUP_BYTES). */
  maxGroupBytes: number;
  /** Largest Parquet page once decompressed (DAS_BULK_MAX_PAGE_BYTES). */
  maxPageBytes: number;
  /** Most columns of a file: a Parquet schema's leaf columns, a CSV header's fields, an NDJSON object's keys (DAS_BULK_MAX_COLUMNS). */
  maxColumns: number;
  /** Most bytes a compressed (gzip, zstd) CSV or NDJSON file may decompress to (DAS_BULK_MAX_DECOMPRESSED_BYTES). */
  maxDecompressedBytes: number;
  /** Most bytes decompressed per compressed byte read, past the first MiB (DAS_BULK_MAX_COMPRESSION_RATIO). */
  maxCompressionRatio: number;
  /** Largest window a zstd frame may declare: the memory its decoder holds (DAS_BULK_MAX_ZSTD_WINDOW_BYTES). */
  maxZstdWindowBytes: number;
}


/** Settings for remote sources (https://, s3://): an overall deadline per file and a minimum rate. */
export interface SourceLimits {
  /** A whole file's read (or one range read) must finish within this (DAS_BULK_SOURCE_DEADLINE_MS). */
  deadlineMs: number;
  /** Bytes per second a body must keep up, measured over windows of rateWindowMs (DAS_BULK_SOURCE_MIN_BYTES_PER_S). */
  minBytesPerSecond: number;
  rateWindowMs: number;
}


/** The file budgets of the settings (the group and page budgets are at most 1 GiB: a single read is one Buffer, and node reads at most 2 GiB at once). */
export function fileLimits(s: DataPlaneSettings): FileLimits {
  return {
    maxRowBytes: s.DAS_BULK_MAX_ROW_BYTES,
    maxFooterBytes: s.DAS_BULK_MAX_FOOTER_BYTES,
    maxGroupRows: s.DAS_BULK_MAX_GROUP_ROWS,
    maxGroupValues: s.DAS_BULK_MAX_GROUP_VALUES,
    maxGroupBytes: s.DAS_BULK_MAX_GROUP_BYTES,
    maxPageBytes: s.DAS_BULK_MAX_PAGE_BYTES,
    maxColumns: s.DAS_BULK_MAX_COLUMNS,
    maxDecompressedBytes: s.DAS_BULK_MAX_DECOMPRESSED_BYTES,
    maxCompressionRatio: s.DAS_BULK_MAX_COMPRESSION_RATIO,
    maxZstdWindowBytes: s.DAS_BULK_MAX_ZSTD_WINDOW_BYTES,
  };
}

export function sourceLimits(s: DataPlaneSettings): SourceLimits {
  return {
    deadlineMs: s.DAS_BULK_SOURCE_DEADLINE_MS,
    minBytesPerSecond: s.DAS_BULK_SOURCE_MIN_BYTES_PER_S,
    rateWindowMs: s.DAS_BULK_SOURCE_RATE_WINDOW_MS,
  };
}

export const DEFAULT_FILE_LIMITS: FileLimits = fileLimits(DATAPLANE_DEFAULTS);
export const DEFAULT_SOURCE_LIMITS: SourceLimits = sourceLimits(DATAPLANE_DEFAULTS);

/** Longest text of a stored error (a refused row's message, a failed load's reason). */
export const MAX_MESSAGE_CHARS = 500;
/** How much of an input a message may quote. */
export const MAX_QUOTE_CHARS = 200;

/** Input quoted in a message: at most MAX_QUOTE_CHARS characters, marked when cut. */
export function quote(text: string, max = MAX_QUOTE_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A message the store can always keep: no NUL or other C0 controls but tab/newline, no lone
 * surrogates (not valid UTF-8), at most MAX_MESSAGE_CHARS characters.
 */
export function storableMessage(text: string, max = MAX_MESSAGE_CHARS): string {
  // eslint-disable-next-line no-control-regex
  let out = text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (out.length > max) out = `${out.slice(0, max - 1)}…`;
  return out.replace(LONE_SURROGATE, '\ufffd');
}
