/** The nextTick warm-up main.ts runs first: every tick runs, in rounds that let the event loop turn. */
import { expect } from 'chai';
import { warmUpNextTick } from './next-tick-warm-up.js';

describe('nextTick warm-up (next-tick-warm-up.ts)', () => {
  it('runs every tick it queues, a partial last round included', async () => {
    expect(await warmUpNextTick(4_500)).to.equal(4_500);
    expect(await warmUpNextTick(1)).to.equal(1);
    expect(await warmUpNextTick(0)).to.equal(0);
  });

  it('queues one round at a time, the event loop turning between rounds (I/O and timers are not held up)', async () => {
    let turns = 0;
    const turn = (): void => {
      turns++;
      if (!done) setImmediate(turn);
    };
    let done = false;
    setImmediate(turn);
    const ran = await warmUpNextTick(10_000);
    done = true;
    expect(ran).to.equal(10_000);
    // Five rounds of 2,000: the loop turned between them, not once at the end.
    expect(turns).to.be.at.least(4);
  });
});
