import { expect } from 'chai';
import pino from 'pino';
import { BatchedLogDestination, FLUSH_INTERVAL_MS } from './log-destination.js';

const afterInterval = () => new Promise((r) => setTimeout(r, FLUSH_INTERVAL_MS + 20));

function recordingOutput() {
  const writes: string[] = [];
  let syncFlushes = 0;
  return { writes, syncFlushes: () => syncFlushes, output: { write: (chunk: string) => writes.push(chunk), flushSync: () => void syncFlushes++ } };
}

describe('batched log destination', () => {
  it('holds lines for at most the flush interval, then hands them over in one write, in order', async () => {
    const { writes, output } = recordingOutput();
    const logger = pino({ base: undefined }, new BatchedLogDestination(output));
    for (let i = 0; i < 5; i++) logger.info({ n: i }, 'line');
    expect(writes).to.deep.equal([]);
    await afterInterval();
    expect(writes).to.have.length(1);
    expect(writes[0].trim().split('\n').map((l) => JSON.parse(l).n)).to.deep.equal([0, 1, 2, 3, 4]);
    logger.info({ n: 5 }, 'later');
    await afterInterval();
    expect(writes.map((w) => w.trim().split('\n').length)).to.deep.equal([5, 1]);
  });

  it('writes at once when more piles up than a batch should hold', () => {
    const { writes, output } = recordingOutput();
    const destination = new BatchedLogDestination(output);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 100; i++) destination.write(line);
    expect(writes.length).to.be.at.least(1);
    expect(writes.join('').length).to.be.at.least(64 * 1024);
  });

  it('flushSync writes what is pending and flushes the output synchronously', () => {
    const { writes, output, syncFlushes } = recordingOutput();
    const destination = new BatchedLogDestination(output);
    destination.write('a\n');
    destination.write('b\n');
    destination.flushSync();
    expect(writes).to.deep.equal(['a\nb\n']);
    expect(syncFlushes()).to.equal(1);
  });
});
