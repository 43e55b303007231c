"""Bulk-load files written by real writers (pyarrow, fastparquet, DuckDB), with the records each
must load as: `python make_corpus.py <dir> [--large N]` writes every file into <dir>, and for
each `<name>.expected.ndjson` (the records as the API answers them, in row order) and one
`corpus.json` listing them: [{"file", "format", "writer", "options", "rows"}].

Each file's rows come from one generator (`row(i)`): every Parquet type the engine maps, nulls in
every nullable column at a different stride, a column that is all null, repeated values (for
dictionaries), a struct column and a dotted column name. `--seeds <dir>` writes the small
demo.Person files the fuzz test (dataplane/test/fuzz-bulk-files.test.ts) mutates. The bulk-writers test
(e2e/bulk-writers/bulk-writers.test.ts) loads each file and compares every record.
"""

import datetime as dt
import json
import os
import sys
from decimal import Decimal

import duckdb
import fastparquet
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
BASE_US = 946_684_800_000_000  # 2000-01-01T00:00:00Z in microseconds
POSTCODES = ["AB1 2CD", "EF3 4GH", "IJ5 6KL", "MN7 8OP", "QR9 0ST", "Zürich 8001", "東京 100"]
CITIES = ["Leeds", "York", "Hull", "Ely"]


def null_at(i, k):
    """Column k is null on every (5 + k)-th row, so every nullable column has nulls, each elsewhere."""
    return i % (5 + k) == k


def row(i, large_text=False):
    """Row i in Python values (None for null)."""
    us = BASE_US + i * 1_234_567_891 + (i % 1000)  # sub-millisecond parts for us/ns columns
    text = f"text {i} ü€ " + ("x" * (20_000 + (i * 7919) % 40_000) if large_text else "abc" * (i % 7))
    return {
        "id": f"r{i}",
        "i16": None if null_at(i, 1) else (i * 7919) % 65536 - 32768,
        "i32": None if null_at(i, 2) else (i * 2654435761) % 2**32 - 2**31,
        "i64": None if null_at(i, 3) else (i * 6364136223846793005) % 2**53 - 2**52,
        "f32": None if null_at(i, 4) else float(np.float32((i % 1000) / 7)),
        "f64": None if null_at(i, 5) else i / 3 + 0.1,
        "dec": None if null_at(i, 6) else Decimal((i * 37) % 100_000 - 50_000).scaleb(-2),
        "flag": None if null_at(i, 7) else i % 3 == 0,
        "day": None if null_at(i, 8) else dt.date(1970, 1, 1) + dt.timedelta(days=(i * 13) % 40_000),
        "ts_ms": None if null_at(i, 9) else us // 1000,
        "ts_us": None if null_at(i, 10) else us,
        "ts_ns": None if null_at(i, 11) else us * 1000 + 789,
        "postcode": None if null_at(i, 12) else POSTCODES[i % len(POSTCODES)],
        "text": None if null_at(i, 13) else text,
        "memo": None,
        "address": None if null_at(i, 14) else {"postcode": None if i % 4 == 1 else POSTCODES[(i * 3) % len(POSTCODES)], "city": CITIES[i % len(CITIES)]},
        "address.street": None if null_at(i, 15) else f"{i % 200} High St",
    }


def iso_ms(ms):
    """As the API answers a timestamp: ISO-8601 in UTC, its milliseconds without trailing zeros."""
    fraction = f".{ms % 1000:03d}".rstrip("0") if ms % 1000 else ""
    return (EPOCH + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def expected(r, columns):
    """The record the API answers for row r loaded from a file with these columns (timestamps cut to milliseconds)."""
    out = {"id": r["id"], "version": 1}
    for c in columns:
        v = r[c]
        if c == "id" or v is None:
            continue
        if c in ("ts_ms",):
            v = iso_ms(v)
        elif c == "ts_us":
            v = iso_ms(v // 1000)
        elif c in ("ts_ns", "ts96"):
            v = iso_ms(v // 1_000_000)
        elif c == "day":
            v = v.isoformat()
        elif c == "dec":
            v = float(v)
        if c == "address":
            v = {k: x for k, x in v.items() if x is not None}
            if not v:
                continue
        if c == "address.street":
            out.setdefault("address", {})["street"] = v
            continue
        if c == "address":
            out["address"] = {**v, **out.get("address", {})}
            continue
        out[c] = v
    return out


ALL = ["id", "i16", "i32", "i64", "f32", "f64", "dec", "flag", "day", "ts_ms", "ts_us", "ts_ns", "postcode", "text", "memo", "address", "address.street"]
TYPES = {
    "id": pa.string(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "dec": pa.decimal128(9, 2),
    "flag": pa.bool_(),
    "day": pa.date32(),
    "ts_ms": pa.timestamp("ms", tz="UTC"),
    "ts_us": pa.timestamp("us", tz="UTC"),
    "ts_ns": pa.timestamp("ns", tz="UTC"),
    "postcode": pa.string(),
    "text": pa.string(),
    "memo": pa.string(),
    "address": pa.struct([("postcode", pa.string()), ("city", pa.string())]),
    "address.street": pa.string(),
}


def arrow_table(rows, columns=ALL, types=TYPES):
    return pa.table({c: pa.array([r[c] for r in rows], type=types[c]) for c in columns})


class Corpus:
    def __init__(self, out):
        self.out = out
        self.entries = []
        self.expected = {}
        self.tables = {}

    def add(self, name, fmt, writer, options, rows, columns, write):
        path = os.path.join(self.out, name)
        write(path)
        # Files of the same rows and columns expect the same records: written once, linked.
        key = (id(rows), tuple(columns))
        if key in self.expected:
            os.link(self.expected[key], path + ".expected.ndjson")
        else:
            with open(path + ".expected.ndjson", "w", encoding="utf-8") as f:
                f.writelines(json.dumps(expected(r, columns), ensure_ascii=False) + "\n" for r in rows)
            self.expected[key] = path + ".expected.ndjson"
        self.entries.append({"file": name, "format": fmt, "writer": writer, "options": options, "rows": len(rows)})

    def pyarrow(self, name, n, options, columns=ALL, types=TYPES, large_text=False):
        rows, table = self.table(n, columns, types, large_text)
        self.add(name, "PARQUET", f"pyarrow {pa.__version__}", options, rows, columns, lambda p: pq.write_table(table, p, **options))
        return rows, table


    def table(self, n, columns=ALL, types=TYPES, large_text=False):
        """Rows 0..n-1 and their Arrow table, made once for each shape."""
        key = (n, tuple(columns), tuple(str(types[c]) for c in columns), large_text)
        if key not in self.tables:
            rows = ROWS(n, large_text)
            self.tables[key] = (rows, arrow_table(rows, columns, types))
        return self.tables[key]


_rows = {}


def ROWS(n, large_text=False):
    if (n, large_text) not in _rows:
        _rows[(n, large_text)] = [row(i, large_text) for i in range(n)]
    return _rows[(n, large_text)]


def make(out, large):
    os.makedirs(out, exist_ok=True)
    c = Corpus(out)
    small = 700

    # pyarrow: its defaults (snappy, dictionary, data page v1), large and small.
    c.pyarrow("pa-defaults-large.parquet", large, {})
    c.pyarrow("pa-defaults.parquet", small, {})
    for codec in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]:
        for version in ["1.0", "2.0"]:
            c.pyarrow(f"pa-{codec}-v{version[0]}.parquet", small, {"compression": codec, "data_page_version": version})
    c.pyarrow("pa-no-dictionary.parquet", small, {"use_dictionary": False})
    c.pyarrow("pa-no-dictionary-v2.parquet", small, {"use_dictionary": False, "data_page_version": "2.0"})
    # A dictionary page limit of 256 bytes: every column falls back to PLAIN mid-column.
    c.pyarrow("pa-dictionary-fallback.parquet", 3000, {"dictionary_pagesize_limit": 256})
    c.pyarrow("pa-dictionary-fallback-v2.parquet", 3000, {"dictionary_pagesize_limit": 256, "data_page_version": "2.0", "compression": "zstd"})
    delta_ints = {k: "DELTA_BINARY_PACKED" for k in ["i16", "i32", "i64", "ts_ms", "ts_us", "ts_ns", "day"]}
    for version in ["1.0", "2.0"]:
        v = version[0]
        c.pyarrow(f"pa-delta-binary-packed-v{v}.parquet", 3000, {"use_dictionary": False, "column_encoding": delta_ints, "data_page_version": version})
        c.pyarrow(f"pa-delta-length-byte-array-v{v}.parquet", 3000, {"use_dictionary": False, "column_encoding": {k: "DELTA_LENGTH_BYTE_ARRAY" for k in ["id", "postcode", "text", "address.street"]}, "data_page_version": version})
        c.pyarrow(f"pa-delta-byte-array-v{v}.parquet", 3000, {"use_dictionary": False, "column_encoding": {k: "DELTA_BYTE_ARRAY" for k in ["id", "postcode", "text", "address.street"]}, "data_page_version": version})
        c.pyarrow(f"pa-byte-stream-split-v{v}.parquet", 3000, {"use_dictionary": False, "column_encoding": {k: "BYTE_STREAM_SPLIT" for k in ["f32", "f64", "i32", "i64"]}, "data_page_version": version})
    c.pyarrow("pa-page-index.parquet", 3000, {"write_page_index": True, "data_page_size": 4096})
    c.pyarrow("pa-no-statistics.parquet", small, {"write_statistics": False})
    c.pyarrow("pa-many-row-groups.parquet", 5000, {"row_group_size": 300})
    c.pyarrow("pa-tiny-pages.parquet", 3000, {"data_page_size": 64, "write_batch_size": 16, "row_group_size": 1000})
    c.pyarrow("pa-tiny-pages-v2.parquet", 3000, {"data_page_size": 64, "write_batch_size": 16, "data_page_version": "2.0", "compression": "gzip"})
    c.pyarrow("pa-decimal-as-integer.parquet", small, {"store_decimal_as_integer": True})
    c.pyarrow("pa-checksums.parquet", small, {"write_page_checksum": True})
    c.pyarrow("pa-large-strings.parquet", 200, {"compression": "zstd"}, types={**TYPES, "text": pa.large_string(), "postcode": pa.large_string()}, large_text=True)
    # INT96 timestamps (every timestamp column of the file): the ns column as INT96.
    int96 = [k for k in ALL if k not in ("ts_ms", "ts_us")]
    rows = [row(i) for i in range(small)]
    for r in rows:
        r["ts96"] = r["ts_ns"]
    table = pa.table({("ts96" if k == "ts_ns" else k): pa.array([r[k] for r in rows], type=TYPES[k]) for k in int96})
    c.add("pa-int96.parquet", "PARQUET", f"pyarrow {pa.__version__}", {"use_deprecated_int96_timestamps": True}, rows, [("ts96" if k == "ts_ns" else k) for k in int96], lambda p: pq.write_table(table, p, use_deprecated_int96_timestamps=True))

    # fastparquet (from pandas; flat columns): its defaults and options.
    flat = ["id", "i32", "i64", "f64", "flag", "ts_ns", "postcode", "text", "memo", "address.street"]
    for name, options in [
        ("fp-defaults.parquet", {}),
        ("fp-gzip-row-groups.parquet", {"compression": "GZIP", "row_group_offsets": 250}),
        ("fp-zstd.parquet", {"compression": "ZSTD"}),
        ("fp-brotli-no-stats.parquet", {"compression": "BROTLI", "stats": False}),
        ("fp-lz4.parquet", {"compression": "LZ4"}),
        ("fp-int96.parquet", {"times": "int96"}),
        ("fp-no-nulls-flag.parquet", {"has_nulls": False}),
    ]:
        columns = flat if options.get("has_nulls") is not False else ["id", "i32", "f64", "postcode"]
        rows = ROWS(small)
        if options.get("has_nulls") is False:
            rows = [{**r, "i32": r["i32"] or 0, "f64": r["f64"] or 0.5, "postcode": r["postcode"] or "none"} for r in rows]
        frame = pd.DataFrame({k: pandas_column(k, [r[k] for r in rows]) for k in columns})
        c.add(name, "PARQUET", f"fastparquet {fastparquet.__version__}", options, rows, columns, lambda p, f=frame, o=options: fastparquet.write(p, f, **o))

    # DuckDB: Parquet (its defaults, zstd, small row groups, format v2) from the same rows, CSV and NDJSON.
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for name, n, options in [
        ("duckdb-defaults-large.parquet", large, "FORMAT parquet"),
        ("duckdb-defaults.parquet", small, "FORMAT parquet"),
        ("duckdb-zstd-row-groups.parquet", 5000, "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048"),
        ("duckdb-v2.parquet", 3000, "FORMAT parquet, PARQUET_VERSION v2"),
        ("duckdb-uncompressed.parquet", small, "FORMAT parquet, COMPRESSION uncompressed"),
        ("duckdb-gzip.parquet", small, "FORMAT parquet, COMPRESSION gzip"),
        ("duckdb-brotli.parquet", small, "FORMAT parquet, COMPRESSION brotli"),
        ("duckdb-lz4.parquet", small, "FORMAT parquet, COMPRESSION lz4"),
    ]:
        rows, source = c.table(n)
        con.register("source", source)
        c.add(name, "PARQUET", f"duckdb {duckdb.__version__}", {"copy": options}, rows, ALL, lambda p, o=options: con.execute(f"COPY (SELECT * FROM source) TO '{p}' ({o})"))
        con.unregister("source")
    text_columns = ["id", "i16", "i32", "i64", "f64", "flag", "day", "postcode", "text", "memo", "address.street"]
    for name, n, fmt, options in [
        ("duckdb.csv", small, "CSV", "FORMAT csv, HEADER true"),
        ("duckdb-many.csv", 5000, "CSV", "FORMAT csv, HEADER true"),
        ("duckdb.ndjson", small, "NDJSON", "FORMAT json"),
    ]:
        rows, source = c.table(n, text_columns)
        con.register("source", source)
        c.add(name, fmt, f"duckdb {duckdb.__version__}", {"copy": options}, rows, text_columns, lambda p, o=options: con.execute(f"COPY (SELECT * FROM source) TO '{p}' ({o})"))
        con.unregister("source")

    refusals(c, con)

    with open(os.path.join(out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(c.entries, f, indent=1)


def refusals(c, con):
    """Files whose values the engine cannot load as given: each entry's "refused" is what its FAILED error must say.

    A list<decimal> column (pyarrow, DuckDB): no property type holds a list, so each row is refused naming the
    column (its decimals read exactly, not rounded). A DECIMAL(38, 10) of more than 15 significant digits: a JSON
    number cannot carry it exactly, so the row is refused naming the column, not loaded rounded.
    """
    n = 50
    ids = [f"r{i}" for i in range(n)]
    lists = pa.table({"id": ids, "decs": pa.array([[Decimal("1.15"), Decimal(i).scaleb(-2)] for i in range(n)], type=pa.list_(pa.decimal128(9, 2)))})
    wide = pa.table({"id": ids, "dec": pa.array([Decimal("1234567890123456789.0123456789") + i for i in range(n)], type=pa.decimal128(38, 10))})
    for name, writer, table, refused in [
        ("pa-list-decimal.parquet", "pyarrow", lists, "decs"),
        ("pa-decimal-38.parquet", "pyarrow", wide, "column dec: a DECIMAL(38, 10) value of more than 15 significant digits"),
    ]:
        pq.write_table(table, os.path.join(c.out, name))
        c.entries.append({"file": name, "format": "PARQUET", "writer": f"pyarrow {pa.__version__}", "options": {}, "rows": n, "refused": refused})
    con.register("lists", lists)
    path = os.path.join(c.out, "duckdb-list-decimal.parquet")
    con.execute(f"COPY (SELECT * FROM lists) TO '{path}' (FORMAT parquet)")
    con.unregister("lists")
    c.entries.append({"file": "duckdb-list-decimal.parquet", "format": "PARQUET", "writer": f"duckdb {duckdb.__version__}", "options": {"copy": "FORMAT parquet"}, "rows": n, "refused": "decs"})


def pandas_column(name, values):
    if name in ("i32",):
        return pd.array(values, dtype="Int32")
    if name in ("i64",):
        return pd.array(values, dtype="Int64")
    if name == "flag":
        return pd.array(values, dtype="boolean")
    if name == "f64":
        return pd.array(values, dtype="Float64")
    if name == "ts_ns":
        return pd.to_datetime([None if v is None else v for v in values], unit="ns", utc=True)
    return pd.Series(values, dtype=object)


def seeds(out):
    """Small demo.Person files (id, name, age; nulls, repeated names) from pyarrow and DuckDB: the fuzz test's starting points."""
    os.makedirs(out, exist_ok=True)
    n = 300
    table = pa.table({
        "id": pa.array([f"s{i}" for i in range(n)]),
        "name": pa.array([None if i % 7 == 3 else f"name {i % 20} ü€" for i in range(n)]),
        "age": pa.array([None if i % 11 == 5 else i % 90 for i in range(n)], type=pa.int32()),
    })
    pq.write_table(table, os.path.join(out, "pyarrow-defaults.parquet"), row_group_size=100)
    pq.write_table(table, os.path.join(out, "pyarrow-v2-zstd.parquet"), row_group_size=120, data_page_version="2.0", compression="zstd")
    pq.write_table(table, os.path.join(out, "pyarrow-delta-gzip.parquet"), use_dictionary=False, compression="gzip", column_encoding={"id": "DELTA_BYTE_ARRAY", "name": "DELTA_LENGTH_BYTE_ARRAY", "age": "DELTA_BINARY_PACKED"})
    pq.write_table(table, os.path.join(out, "pyarrow-tiny-pages.parquet"), data_page_size=64, write_batch_size=16)
    con = duckdb.connect()
    con.register("source", table)
    con.execute(f"COPY (SELECT * FROM source) TO '{os.path.join(out, 'duckdb-defaults.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 128)")
    con.execute(f"COPY (SELECT * FROM source) TO '{os.path.join(out, 'duckdb-v2.parquet')}' (FORMAT parquet, PARQUET_VERSION v2)")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--seeds":
        seeds(args[1])
        sys.exit(0)
    large = 100_000
    if "--large" in args:
        large = int(args[args.index("--large") + 1])
        del args[args.index("--large") : args.index("--large") + 2]
    make(args[0], large)
