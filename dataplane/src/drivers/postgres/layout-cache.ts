/**
 * The table layouts of the datasets' current config generations. Each config generation has its
 * own layouts (a new property adds a column); keeping every generation's would grow with each
 * config change, so a dataset keeps only the generation seen last. A request still running on
 * the previous generation when the next one arrives just builds its layout again (cheap: strings
 * and two digests; the prepared statements' names follow the text, so the server keeps them).
 */
import type { DatasetConfig } from '../../../../model/types.js';
import type { TableLayout } from './sql.js';

export class LayoutCache {
  private readonly byDataset = new Map<string, { generation: number; layouts: Map<string, TableLayout> }>();

  /** The schema's layout for this config, built by `build` the first time. */
  get(dataset: DatasetConfig, schemaName: string, build: () => TableLayout): TableLayout {
    let entry = this.byDataset.get(dataset.id);
    // The latest generation seen wins, also a lower one: a Dataset deleted and created again
    // starts counting at 1 anew.
    if (!entry || entry.generation !== dataset.generation) {
      entry = { generation: dataset.generation, layouts: new Map() };
      this.byDataset.set(dataset.id, entry);
    }
    let layout = entry.layouts.get(schemaName);
    if (!layout) {
      layout = build();
      entry.layouts.set(schemaName, layout);
    }
    return layout;
  }

  /** The dataset was purged (or removed): its layouts go. */
  forget(datasetId: string): void {
    this.byDataset.delete(datasetId);
  }

  /** Layouts held, over every dataset (for tests and the curious). */
  get size(): number {
    let n = 0;
    for (const entry of this.byDataset.values()) n += entry.layouts.size;
    return n;
  }

  /** The generation held for a dataset, if any. */
  generationOf(datasetId: string): number | undefined {
    return this.byDataset.get(datasetId)?.generation;
  }
}
