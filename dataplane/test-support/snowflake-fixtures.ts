/** A small warehouse dataset for the pure tests of this folder. */
import { renderDatasetConfig } from '../../model/render.js';
import type { DatasetConfig, LocationKind } from '../../model/types.js';

export function warehouseDataset(kind: Extract<LocationKind, 'snowflake' | 'iceberg'> = 'snowflake', extra: Partial<DatasetConfig['location']> = {}): DatasetConfig {
  return renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'shop', generation: 1 },
    spec: {
      environment: 'local',
      location: { kind, database: 'DB', schema: 'SHOP', warehouse: 'WH', ...extra },
      schemas: {
        'shop.Order': {
          properties: {
            total: { type: 'number' },
            count: { type: 'integer' },
            placedAt: { type: 'timestamp' },
            day: { type: 'date' },
            paid: { type: 'boolean' },
            address: { type: 'object', properties: { city: { type: 'string' } } },
            customer: { type: 'link', schema: 'shop.Customer' },
          },
        },
        'shop.Customer': { properties: { name: { type: 'string' } } },
      },
    },
  });
}

/** The Iceberg settings the pure tests use. */
export const ICEBERG_SETTINGS = { externalVolume: 'VOL', baseLocation: 'lake/shop' };
