/**
 * Files compressed by the tools people use: the `gzip` and `zstd` command-line tools (installed
 * by scripts/zstd/install.sh, called by `pretest`) and Python's gzip module, so the bulk-load
 * tests read what real writers write, not only what node:zlib writes.
 */
import { execFileSync } from 'node:child_process';

export type Compressor = 'gzip' | 'zstd' | 'zstd -19' | 'python-gzip';
export const COMPRESSORS: readonly Compressor[] = ['gzip', 'zstd', 'zstd -19', 'python-gzip'];

export function compress(bytes: Buffer | string, tool: Compressor): Buffer {
  const input = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  const run = (command: string, args: string[]) => execFileSync(command, args, { input, maxBuffer: 1024 ** 3 });
  switch (tool) {
    case 'gzip':
      return run('gzip', ['-c', '-n']);
    case 'zstd':
      return run('zstd', ['-q', '-c']);
    case 'zstd -19':
      return run('zstd', ['-q', '-c', '-19']);
    case 'python-gzip':
      return run('python3', ['-c', 'import gzip, sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read()))']);
  }
}
