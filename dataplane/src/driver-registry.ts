/** One driver instance per location kind; kinds without a driver yet fail clearly. */
import type { Logger } from 'pino';
import type { DatasetConfig, LocationKind } from '../../model/types.js';
import { ApiError } from './engine/errors.js';
import type { LocationDriver } from './engine/contract.js';

export type DriverFactory = () => LocationDriver;

export class DriverRegistry {
  private readonly drivers = new Map<LocationKind, LocationDriver>();

  constructor(
    private readonly factories: Partial<Record<LocationKind, DriverFactory>>,
    private readonly logger: Logger,
    /** Wraps each driver once it is created (tracing's store spans). */
    private readonly wrap?: (driver: LocationDriver) => LocationDriver,
  ) {}

  for(dataset: DatasetConfig): LocationDriver {
    const kind = dataset.location.kind;
    let driver = this.drivers.get(kind);
    if (!driver) {
      const factory = this.factories[kind];
      if (!factory) throw new ApiError(501, 'LOCATION_NOT_SUPPORTED', `location kind "${kind}" has no driver in this data plane yet`);
      driver = this.wrap ? this.wrap(factory()) : factory();
      this.drivers.set(kind, driver);
      this.logger.debug({ kind }, 'location driver created');
    }
    return driver;
  }

  async close(): Promise<void> {
    await Promise.all([...this.drivers.values()].map((d) => d.close()));
    this.drivers.clear();
  }
}
