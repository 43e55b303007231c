/**
 * TEST PEER ONLY. RFC-4180 CSV as Snowflake's COPY INTO reads it with FIELD_OPTIONALLY_ENCLOSED_BY
 * = '"' and EMPTY_FIELD_AS_NULL = TRUE: an unquoted empty field is NULL, a quoted "" is the empty
 * string, quotes inside a quoted field are doubled, and a quoted field may hold commas and line
 * breaks. Pure: text in, rows out (or an error naming the line).
 */

export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

export function parseCsv(text: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let line = 1;
  let i = 0;
  const n = text.length;
  if (n === 0) return rows;
  for (;;) {
    // One field starting at i.
    let value: string | null;
    if (text[i] === '"') {
      const start = line;
      let out = '';
      i++;
      for (;;) {
        if (i >= n) throw new CsvError(`Found character end of file instead of field delimiter ',' (a quoted field opened on line ${start} is not closed)`, start);
        const c = text[i];
        if (c === '"') {
          if (text[i + 1] === '"') {
            out += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (c === '\n') line++;
        out += c;
        i++;
      }
      if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') throw new CsvError(`Found character '${text[i]}' instead of field delimiter ','`, line);
      value = out;
    } else {
      let end = i;
      while (end < n && text[end] !== ',' && text[end] !== '\n' && text[end] !== '\r') end++;
      const raw = text.slice(i, end);
      if (raw.includes('"')) throw new CsvError(`Found character '"' in an unquoted field`, line);
      value = raw === '' ? null : raw;
      i = end;
    }
    row.push(value);
    if (i >= n) {
      rows.push(row);
      return rows;
    }
    if (text[i] === ',') {
      i++;
      continue;
    }
    // End of record: \n or \r\n; a final line break ends the file.
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    line++;
    rows.push(row);
    row = [];
    if (i >= n) return rows;
  }
}
