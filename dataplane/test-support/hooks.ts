/** Mocha root hooks: shared test peers are stopped once, after every suite. */
import { stopTestPostgres } from './postgres.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    // stopTestPostgres escalates SIGINT (10 s), SIGQUIT (5 s), SIGKILL (5 s): it ends within ~20 s.
    this.timeout(30000);
    await stopTestPostgres();
  },
};
