/**
 * One bounded request to the Kubernetes API server with the process's own credentials (in-cluster
 * or KUBECONFIG): node:https directly, for a timeout and a bounded answer; the KubeConfig adds the
 * CA and the credentials. Errors carry the cause for the log only: callers answer clients with
 * their own words, never with the API server's address.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeAnswer {
  status: number;
  text: string;
}

export interface KubeRequestOptions {
  method: 'GET' | 'POST';
  body?: string;
  timeoutMs: number;
  maxBytes: number;
  /** The Accept header (default application/json; the JWKS is served as application/jwk-set+json only). */
  accept?: string;
}

export async function kubeRequest(kubeConfig: KubeConfig, path: string, options: KubeRequestOptions): Promise<KubeAnswer> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the Kubernetes config');
  const url = new URL(path, cluster.server);
  const headers: Record<string, string | number> = { accept: options.accept ?? 'application/json' };
  if (options.body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(options.body) });
  const request: RequestOptions = {
    method: options.method,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port,
    path: url.pathname,
    headers,
    timeout: options.timeoutMs,
  };
  await kubeConfig.applyToHTTPSOptions(request);
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise<KubeAnswer>((resolve, reject) => {
    const req = send(request, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) return req.destroy(new Error(`the answer is larger than ${options.maxBytes} bytes`));
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}
