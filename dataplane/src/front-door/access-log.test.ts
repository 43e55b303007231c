import { expect } from 'chai';
import pino, { type LoggerOptions } from 'pino';
import { writeAccessLog, type AccessLogEntry } from './access-log.js';

/** A logger whose lines are collected; the timestamp fixed so two lines compare byte for byte. */
function capture(options: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = pino({ level: 'info', base: { service: 'data-plane' }, timestamp: () => ',"time":1764300000000', ...options }, { write: (s: string) => void lines.push(s) });
  return { logger, lines };
}

const ENTRIES: AccessLogEntry[] = [
  { reqId: '0b7c5a0e-9a7e-4c1f-8d55-2a0c6a1f3e11', method: 'GET', path: '/demo/demo.Person/p1', status: 200, ms: 1.23 },
  { reqId: 'x', method: 'POST', path: '/demo/"quoted"\\back\\slash', status: 400, ms: 0 },
  // node hands the request line to JavaScript as latin1: every character below U+0100.
  { reqId: 'x', method: 'DELETE', path: '/d/caf\u00e9/\u00ff\u007f/%22', status: 404, ms: 12345.67 },
  { reqId: 'x', method: undefined, path: '/' + 'a"'.repeat(200), status: 500, ms: NaN },
  { reqId: 'x', method: 'GET', path: '[redacted: blocked by the firewall]', status: 403, ms: Infinity },
];

describe('access-log line', () => {
  it("is byte for byte what logger.info writes, on the data plane's logger and its children", () => {
    for (const make of [(l: pino.Logger) => l, (l: pino.Logger) => l.child({ component: 'gateway', n: 1 })]) {
      const direct = capture();
      const viaPino = capture();
      for (const e of ENTRIES) {
        writeAccessLog(make(direct.logger), e);
        make(viaPino.logger).info({ reqId: e.reqId, method: e.method, path: e.path, status: e.status, ms: e.ms }, 'request');
      }
      expect(direct.lines).to.have.length(ENTRIES.length);
      expect(direct.lines).to.deep.equal(viaPino.lines);
      expect(JSON.parse(direct.lines[1])).to.include({ service: 'data-plane', path: '/demo/"quoted"\\back\\slash', status: 400, msg: 'request' });
    }
  });

  it('writes every duration as pino would, rounded to hundredths as the exchange gives it or not', () => {
    const raw = [0.004, 0.005, 0.07, 0.1, 0.29, 1, 1.005, 2.675, 9.99, 10.1, 99.999, 100, 1234.5, 65535.01, 1e7 + 0.03, 4.35, 0.1 + 0.2, 1e-7, 3e12];
    for (let h = 0; h <= 2000; h++) raw.push(h / 100, h / 1000 + 0.0004);
    const direct = capture();
    const viaPino = capture();
    for (const ms of [...raw, ...raw.map((m) => Math.round(m * 100) / 100)]) {
      writeAccessLog(direct.logger, { ...ENTRIES[0], ms });
      viaPino.logger.info({ reqId: ENTRIES[0].reqId, method: 'GET', path: ENTRIES[0].path, status: 200, ms }, 'request');
    }
    expect(direct.lines).to.deep.equal(viaPino.lines);
  });

  it('writes nothing below level info', () => {
    const { logger, lines } = capture({ level: 'warn' });
    writeAccessLog(logger, ENTRIES[0]);
    expect(lines).to.deep.equal([]);
    logger.level = 'debug';
    writeAccessLog(logger, ENTRIES[0]);
    expect(lines).to.have.length(1);
  });

  it("leaves a logger with redaction, a mixin, formatters or hooks to pino, which applies them", () => {
    const cases: LoggerOptions[] = [
      { redact: ['path'] },
      { mixin: () => ({ zone: 'a' }) },
      { formatters: { log: (o) => ({ ...o, formatted: true }) } },
      { hooks: { streamWrite: (s) => s.replace('request', 'REQUEST') } },
      { serializers: { path: () => 'serialised' } },
      { messageKey: 'message' },
      { nestedKey: 'payload' },
      { msgPrefix: '[gw] ' },
    ];
    for (const options of cases) {
      const direct = capture(options);
      const viaPino = capture(options);
      writeAccessLog(direct.logger, ENTRIES[0]);
      const e = ENTRIES[0];
      viaPino.logger.info({ reqId: e.reqId, method: e.method, path: e.path, status: e.status, ms: e.ms }, 'request');
      expect(direct.lines, JSON.stringify(Object.keys(options))).to.deep.equal(viaPino.lines);
    }
    const redacted = capture({ redact: ['path'] });
    writeAccessLog(redacted.logger, ENTRIES[0]);
    expect(JSON.parse(redacted.lines[0]).path).to.equal('[Redacted]');
  });
});
