/**
 * ServiceAccount token verification: a TokenReview (POST /apis/authentication.k8s.io/v1/tokenreviews)
 * with the process's own Kubernetes credentials (in-cluster, or the cluster KUBECONFIG names),
 * behind a verdict cache bounded in size (LRU) and in time (the token's expiry, at most `maxAgeMs`).
 *
 * The API server unreachable is a 503 (TOKEN_REVIEW_UNAVAILABLE) for a token without a cached
 * verdict; a cached verdict keeps serving. Never an open door: no verdict, no access.
 */
import { existsSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { AuthError } from './errors.js';
import { cacheUntil, earlyRefusal, unverifiedClaims, verdictOf, type TokenReviewStatus, type Verdict } from './service-account.js';

/** The I/O edge: asks the API server about one token. Throws when no answer came. */
export interface TokenReviewer {
  review(token: string, audiences: readonly string[]): Promise<TokenReviewStatus>;
}

export const MAX_VERDICT_AGE_MS = 5 * 60_000;
/** A refusal is remembered briefly: it spares the API server a caller that retries a bad token. */
const MAX_REFUSAL_AGE_MS = 10_000;
const MAX_REVIEW_RESPONSE_BYTES = 64 * 1024;

export interface ServiceAccountVerifierOptions {
  /** Longest a verdict is reused, ms (at most 5 minutes; default 5 minutes). */
  maxAgeMs?: number;
  /** Most verdicts remembered (default 10 000); the least recently used goes first. */
  maxEntries?: number;
  now?: () => number;
}

export class ServiceAccountVerifier {
  private readonly verdicts = new Map<string, { verdict: Verdict; until: number }>();
  private readonly pending = new Map<string, Promise<Verdict>>();
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly reviewer: TokenReviewer | (() => TokenReviewer),
    options: ServiceAccountVerifierOptions = {},
  ) {
    this.maxAgeMs = Math.min(options.maxAgeMs ?? MAX_VERDICT_AGE_MS, MAX_VERDICT_AGE_MS);
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.verdicts.size;
  }

  /** The verdict on `token` for `audiences`; throws AuthError 503 when the API server gives none. */
  async verify(token: string, audiences: readonly string[]): Promise<Verdict> {
    const now = this.now();
    // The audiences are part of the question. Kept in memory only, as the request itself holds it.
    const key = `${audiences.join('\n')}\0${token}`;
    const known = this.verdicts.get(key);
    if (known && known.until > now) {
      this.verdicts.delete(key); // re-inserted: most recently used last
      this.verdicts.set(key, known);
      return known.verdict;
    }
    if (known) this.verdicts.delete(key);
    const early = earlyRefusal(token, audiences, Math.floor(now / 1000));
    if (early) return { ok: false, ...early };
    let inFlight = this.pending.get(key);
    if (!inFlight) {
      inFlight = this.ask(token, audiences, key).finally(() => this.pending.delete(key));
      this.pending.set(key, inFlight);
    }
    return inFlight;
  }

  private async ask(token: string, audiences: readonly string[], key: string): Promise<Verdict> {
    let status: TokenReviewStatus;
    try {
      const reviewer = typeof this.reviewer === 'function' ? this.reviewer() : this.reviewer;
      status = await reviewer.review(token, audiences);
    } catch (err) {
      throw new AuthError(503, 'TOKEN_REVIEW_UNAVAILABLE', `the token cannot be verified now: the Kubernetes API server did not answer the TokenReview (${(err as Error).message.slice(0, 300)})`);
    }
    const verdict = verdictOf(status, audiences);
    // The API server vouched for the token, so its exp now bounds the caller (subscriptions end then).
    const exp = unverifiedClaims(token)?.exp;
    if (verdict.ok && typeof exp === 'number') verdict.exp = exp;
    const now = this.now();
    const until = Math.min(cacheUntil(token, now, this.maxAgeMs), verdict.ok ? Infinity : now + Math.min(MAX_REFUSAL_AGE_MS, this.maxAgeMs));
    if (verdict.ok) verdict.until = until;
    if (this.verdicts.size >= this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value!);
    this.verdicts.set(key, { verdict, until });
    return verdict;
  }
}

/** Whether this process has Kubernetes credentials: KUBECONFIG, ~/.kube/config, or in-cluster. */
export function kubernetesCredentialsSource(env: Pick<DataPlaneSettings, 'KUBECONFIG' | 'KUBERNETES_SERVICE_HOST'>): string | undefined {
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(':').filter(Boolean);
    return files.some((f) => existsSync(f)) ? `KUBECONFIG (${env.KUBECONFIG})` : undefined;
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) return 'in-cluster ServiceAccount';
  const home = join(homedir(), '.kube', 'config');
  return existsSync(home) ? home : undefined;
}

/**
 * TokenReviews with the credentials of a KubeConfig (in-cluster or KUBECONFIG). node:https
 * directly, for a timeout and a bounded answer; the KubeConfig adds the CA and the credentials.
 */
export class KubeTokenReviewer implements TokenReviewer {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly timeoutMs = 5_000,
  ) {}

  static fromDefault(): KubeTokenReviewer {
    const config = new KubeConfig();
    config.loadFromDefault();
    return new KubeTokenReviewer(config);
  }

  async review(token: string, audiences: readonly string[]): Promise<TokenReviewStatus> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster in the Kubernetes config');
    const url = new URL('/apis/authentication.k8s.io/v1/tokenreviews', cluster.server);
    const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } });
    const options: RequestOptions = {
      method: 'POST',
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      path: url.pathname,
      headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) },
      timeout: this.timeoutMs,
    };
    await this.kubeConfig.applyToHTTPSOptions(options);
    const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_REVIEW_RESPONSE_BYTES) return req.destroy(new Error(`the answer is larger than ${MAX_REVIEW_RESPONSE_BYTES} bytes`));
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
    if (status !== 201 && status !== 200) {
      const hint = status === 403 ? ' (the ServiceAccount needs a ClusterRoleBinding to system:auth-delegator)' : '';
      throw new Error(`HTTP ${status}${hint}`);
    }
    const review = JSON.parse(text) as { status?: TokenReviewStatus };
    return review.status ?? {};
  }
}

/**
 * ServiceAccount token verification (trust verified), when this process has Kubernetes
 * credentials. DAS_TOKEN_REVIEW_CACHE_MS shortens how long a verdict is reused (at most 5 minutes).
 */
export function serviceAccountVerifier(env: Pick<DataPlaneSettings, 'KUBECONFIG' | 'KUBERNETES_SERVICE_HOST' | 'DAS_TOKEN_REVIEW_CACHE_MS'>): ServiceAccountVerifier | undefined {
  if (!kubernetesCredentialsSource(env)) return undefined;
  let reviewer: KubeTokenReviewer | undefined;
  return new ServiceAccountVerifier(() => (reviewer ??= KubeTokenReviewer.fromDefault()), {
    maxAgeMs: env.DAS_TOKEN_REVIEW_CACHE_MS,
  });
}

export const NO_KUBERNETES_CREDENTIALS =
  'gateways.iam.trust is verified, but this process has no Kubernetes credentials to verify ServiceAccount tokens with (no KUBECONFIG file, no ~/.kube/config, not in a cluster): set KUBECONFIG to the cluster the tokens come from';
