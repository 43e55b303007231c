import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadManifests } from '../../../model/manifests.js';
import { renderEnvironmentConfig } from '../../../model/render.js';
import { loadOrCreateDevIssuer } from './dev-issuer.js';
import { TokenVerifier } from './jwt.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
const CLI = join(ROOT, 'dataplane/src/auth/token-cli.ts');

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('npm run token (token-cli)', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'das-token-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints a token of the development issuer that the TokenVerifier accepts', async () => {
    const { code, stdout, stderr } = await run(['--sub', 'alice', '--ttl', '60', '--email', 'alice@example.com'], { DATA_DIR: dataDir });
    expect(code, stderr).to.equal(0);
    const token = stdout.trim();
    expect(stdout.split('\n').filter(Boolean)).to.have.length(1);

    const env = renderEnvironmentConfig(loadManifests(join(ROOT, 'examples')).environments[0]);
    const idp = env.identityProvider!;
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: idp.issuer, audience: idp.audiences[0] });
    const claims = await new TokenVerifier(idp, { devIssuer: issuer }).verify(token);
    expect(claims).to.include({ sub: 'alice', email: 'alice@example.com', iss: idp.issuer });
    expect((claims.exp as number) - (claims.iat as number)).to.equal(60);
  });

  it('a token from another DATA_DIR is refused as UNKNOWN_KEY with a hint at DATA_DIR; the CLI names the DATA_DIR it signed with', async () => {
    const otherDir = mkdtempSync(join(tmpdir(), 'das-token-other-'));
    try {
      const { code, stdout, stderr } = await run(['--sub', 'alice'], { DATA_DIR: otherDir });
      expect(code, stderr).to.equal(0);
      expect(stderr).to.include(`DATA_DIR=${otherDir}`).and.include(join(otherDir, 'dev-issuer', 'signing-key.json'));
      const idp = renderEnvironmentConfig(loadManifests(join(ROOT, 'examples')).environments[0]).identityProvider!;
      const serverIssuer = await loadOrCreateDevIssuer(dataDir, { issuer: idp.issuer, audience: idp.audiences[0] });
      const refused = await new TokenVerifier(idp, { devIssuer: serverIssuer }).verify(stdout.trim()).then(() => undefined, (err: Error & { code?: string }) => err);
      expect(refused?.code).to.equal('UNKNOWN_KEY');
      expect(refused?.message).to.include('DATA_DIR').and.include('npm run -s token');
    } finally {
      rmSync(otherDir, { recursive: true, force: true });
    }
  });

  it('exits 2 with the usage on bad arguments', async () => {
    for (const args of [[], ['--sub'], ['--sub', 'a', '--ttl', 'soon'], ['--sub', 'a', '--ttl', '0'], ['--sub', 'a', '--bogus'], ['--sub', 'a', 'extra']]) {
      const { code, stdout, stderr } = await run(args, { DATA_DIR: dataDir });
      expect(code, `${args.join(' ')}: ${stderr}`).to.equal(2);
      expect(stderr).to.include('usage: npm run -s token');
      expect(stdout).to.equal('');
    }
  });

  it('names a missing environment', async () => {
    const { code, stderr } = await run(['--sub', 'a', '--environment', 'nope'], { DATA_DIR: dataDir });
    expect(code).to.equal(1);
    expect(stderr).to.include('no Environment "nope"');
  });
});
