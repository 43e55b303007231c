/**
 * A read through a named prepared statement whose result columns the driver already knows.
 *
 * pg's own Query sends Bind, Describe, Execute and Sync on every execution, so the server answers
 * each one with a RowDescription that pg turns into a fresh parser list and a fresh row template
 * (`Result.addFields`, measured as the largest single pg cost of a read-by-id), and it clones the
 * query config on the way in. The driver built the statement from the table layout, so the column
 * list and types are fixed: this submittable sends Bind, Execute and Sync only and parses each
 * DataRow with the layout's parsers into an array in column order. Same server-side prepared
 * statement, same text-format values, one message fewer each way.
 *
 * It speaks pg's Submittable interface (the one pg-cursor uses): `submit(connection)` writes the
 * messages; the client hands the backend's answers to the `handle*` methods and calls `callback`
 * with an error or the rows.
 */
import type pg from 'pg';

export type ColumnParser = (text: string) => unknown;

/** A SELECT prepared once per connection under `name`, answering text columns in `parsers` order. */
export interface PreparedSelect {
  name: string;
  text: string;
  parsers: readonly ColumnParser[];
}

/** The parts of pg's Connection a submittable drives (not in @types/pg). */
interface WireConnection {
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(message: { name: string; text: string; types: unknown[] }): void;
  bind(message: { statement: string; values: (string | null)[] }): void;
  execute(message: { portal: string; rows: number }): void;
  sync(): void;
}

type Callback = (err: Error | null, rows?: unknown[][]) => void;

export class PreparedRead implements pg.Submittable {
  /** Read by the client: ParseComplete records `name` → `text` as parsed on this connection. */
  readonly name: string;
  readonly text: string;
  callback: Callback | undefined;
  private readonly rows: unknown[][] = [];
  private failure: Error | undefined;

  constructor(
    private readonly statement: PreparedSelect,
    private readonly values: (string | null)[],
  ) {
    this.name = statement.name;
    this.text = statement.text;
  }

  /** Runs the read on a pool connection; resolves to the rows, each an array in column order. */
  static run(pool: pg.Pool, statement: PreparedSelect, values: (string | null)[]): Promise<unknown[][]> {
    return pool.query(new PreparedRead(statement, values) as never) as unknown as Promise<unknown[][]>;
  }

  submit(connection: unknown): void {
    const wire = connection as WireConnection;
    const { name, text } = this;
    const known = wire.parsedStatements[name] ?? wire.submittedNamedStatements[name];
    // One buffer on the wire, as pg's Query does it.
    wire.stream.cork?.();
    try {
      if (known === undefined) {
        wire.parse({ name, text, types: [] });
        wire.submittedNamedStatements[name] = text;
      }
      wire.bind({ statement: name, values: this.values });
      wire.execute({ portal: '', rows: 0 });
      wire.sync();
    } finally {
      wire.stream.uncork?.();
    }
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.failure) return;
    const { fields } = message;
    const { parsers } = this.statement;
    if (fields.length !== parsers.length) {
      // The statement answered other columns than the layout expects: fail the read, never misread.
      this.failure = new Error(`prepared statement ${this.name} returned ${fields.length} columns, expected ${parsers.length}`);
      return;
    }
    const row = new Array<unknown>(fields.length);
    for (let i = 0; i < fields.length; i++) {
      const raw = fields[i];
      row[i] = raw === null ? null : parsers[i](raw);
    }
    this.rows.push(row);
  }

  handleRowDescription(): void {
    // Not asked for (no Describe): nothing to do if a server sends one anyway.
  }

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  handleError(err: Error): void {
    const callback = this.callback;
    this.callback = undefined;
    callback?.(err);
  }

  handleReadyForQuery(): void {
    const callback = this.callback;
    this.callback = undefined;
    if (this.failure) callback?.(this.failure);
    else callback?.(null, this.rows);
  }
}
