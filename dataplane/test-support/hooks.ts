/** Mocha root hooks: shared test peers are stopped once, after every suite. */
import { stopTestPostgres } from './postgres.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    // stopTestPostgres escalates SIGINT (10 s), SIGQUIT (5 s), SIGKILL (5 s), then removes the data
    // directory: after the whole suite it holds hundreds of databases, and on a busy machine the
    // removal alone has outlasted a 30 s budget (CI once failed here with every test green).
    this.timeout(120_000);
    await stopTestPostgres();
  },
};
