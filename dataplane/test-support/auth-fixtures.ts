/** Config fixtures for the auth tests (rendered with the model's own functions). */
import { renderDatasetConfig, renderEnvironmentConfig } from '../../model/render.js';
import type { DatasetConfig, DatasetSpec, EnvironmentConfig, EnvironmentSpec } from '../../model/types.js';

export function datasetConfig(overrides: Partial<DatasetSpec> = {}): DatasetConfig {
  return renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'demo', namespace: 'default' },
    spec: { environment: 'local', location: { kind: 'postgres', databaseSchema: 'demo' }, schemas: {}, ...overrides },
  });
}

export function environmentConfig(overrides: Partial<EnvironmentSpec> = {}): EnvironmentConfig {
  return renderEnvironmentConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name: 'local', namespace: 'default' },
    spec: { type: 'internal', ...overrides },
  });
}
