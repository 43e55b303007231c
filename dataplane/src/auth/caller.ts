/** Who is calling: the `caller` object of the echo endpoint, produced by authentication. */

export interface Caller {
  /** True when the request carried no credentials and the dataset serves anonymous callers. */
  anon: boolean;
  /** Which authentication produced the caller: the IAM gateway, a public token, or none. */
  schema: 'iam' | 'public' | 'anonymous';
  /** The IAM principal identifier (iam), the token's `sub` (public), or `anonymous`. */
  id: string;
  /** The verified token claims (public); empty for iam and anonymous callers. */
  claims: Record<string, unknown>;
  /** Whether the caller matches one of the dataset's `caller.super` patterns. */
  super: boolean;
}

export const ANONYMOUS_ID = 'anonymous';

/** The caller of a request without credentials on a dataset with `caller.anon: true`. Never super. */
export function anonymousCaller(): Caller {
  return { anon: true, schema: 'anonymous', id: ANONYMOUS_ID, claims: {}, super: false };
}
