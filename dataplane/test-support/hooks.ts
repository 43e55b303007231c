/** Mocha root hooks: shared test peers are stopped once, after every suite. */
import { stopTestPostgres } from './postgres.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(30000);
    await stopTestPostgres();
  },
};
