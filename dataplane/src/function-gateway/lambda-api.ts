/**
 * The Lambda Invoke API on the function gateway, so AWS SDKs, boto3 and the AWS CLI call it
 * unmodified with an endpoint override:
 *
 *   POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=$LATEST]
 *
 * FunctionName is the gateway's own function, `service-<environment>-function-service-gateway`
 * (DAS_FUNCTION_NAME): the name, a partial (`<account>:function:<name>`) or full ARN
 * (`arn:aws:lambda:<region>:<account>:function:<name>`; any region and account), optionally with
 * `:$LATEST` (the only version). Anything else is ResourceNotFoundException (404).
 *
 * The request must be signed with AWS Signature Version 4 (service `lambda`) by an access key of
 * `spec.functionGateway.accessKeys`; the key's `name` is the caller's principal: with trust network
 * the data plane is called as that principal (`Proxy <name>`), so the datasets' auth.iam.principals
 * decide; with trust verified it must match `invokers`, and the gateway calls the data plane with its
 * own token, as for ServiceAccount callers.
 *
 * X-Amz-Invocation-Type:
 *   RequestResponse (default)  200 with the invocation's result, the same JSON as `POST /` — including
 *                              results whose status.code is an error: the function handled them, so no
 *                              X-Amz-Function-Error (that header means the function itself failed:
 *                              only a gateway bug, answered `Unhandled` with {errorType, errorMessage})
 *   Event                      payload checked, 202 at once, the operation runs in the background
 *                              (at most maxEventInvocations at a time, else TooManyRequestsException)
 *   DryRun                     204 after the signature and the payload are checked; nothing is called
 * A payload that is not JSON is InvalidRequestContentException (400), as Lambda; with Event or DryRun,
 * so is a payload the gateway would refuse (no function runs to report it in `status`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { anyMatches } from '../auth/principals.js';
import { AccessKeyUnreadable, type AccessKeyStore } from './access-keys.js';
import { LambdaError, sendLambdaError } from './lambda-errors.js';
import { checkRequestTime, parseSigV4, signatureMatches, SigV4Problem } from './sigv4.js';
import { InvocationError, toRestCall, type FunctionResult } from './translate.js';
import type { VerifiedInvocation } from './trust.js';

export const LAMBDA_API_PREFIX = '/2015-03-31/';
const INVOCATIONS = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
const LATEST = '$LATEST';
/** Lambda's own limit on a FunctionName (an ARN with a qualifier). */
const MAX_FUNCTION_NAME = 170;
const NAME = /^[A-Za-z0-9_.-]{1,140}$/;
const QUALIFIER = /^(\$LATEST|[A-Za-z0-9_-]{1,128})$/;
export const DEFAULT_MAX_EVENT_INVOCATIONS = 100;

export interface FunctionReference {
  name: string;
  qualifier?: string;
}

/** FunctionName as Lambda takes it (name, partial ARN, ARN; optional qualifier), or undefined when malformed. */
export function parseFunctionName(value: string): FunctionReference | undefined {
  if (value.length > MAX_FUNCTION_NAME) return undefined;
  const parts = value.split(':');
  let rest: string[];
  if (parts[0] === 'arn') {
    // arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>]
    if (parts.length < 7 || parts.length > 8 || !/^aws[a-z-]*$/.test(parts[1]) || parts[2] !== 'lambda' || !/^[a-z0-9-]+$/.test(parts[3]) || !/^\d{12}$/.test(parts[4]) || parts[5] !== 'function') return undefined;
    rest = parts.slice(6);
  } else if (parts.length >= 3 && parts[1] === 'function') {
    if (parts.length > 4 || !/^\d{12}$/.test(parts[0])) return undefined;
    rest = parts.slice(2);
  } else {
    if (parts.length > 2) return undefined;
    rest = parts;
  }
  const [name, qualifier] = rest;
  if (!NAME.test(name) || (qualifier !== undefined && !QUALIFIER.test(qualifier))) return undefined;
  return qualifier === undefined ? { name } : { name, qualifier };
}

export interface LambdaApiOptions {
  /** The gateway's function name (DAS_FUNCTION_NAME). */
  functionName: string;
  accessKeys: AccessKeyStore;
  maxPayload: number;
  maxEventInvocations?: number;
  verified?: VerifiedInvocation;
  logger: Logger;
  /** Reads the payload within maxPayload (server.ts readBody). */
  readBody(req: IncomingMessage, max: number): Promise<Buffer>;
  /** Invokes the function for a payload as a principal (server.ts invoke). */
  invoke(payload: unknown, principal: string, requestId: string): Promise<FunctionResult>;
  now?: () => number;
}

export interface LambdaApi {
  handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<{ operation?: string; code: number }>;
  /** Resolves when the Event invocations running in the background have finished. */
  settled(): Promise<void>;
}

type InvocationType = 'RequestResponse' | 'Event' | 'DryRun';

function invocationTypeOf(req: IncomingMessage): InvocationType {
  const value = req.headers['x-amz-invocation-type'] ?? 'RequestResponse';
  if (value === 'RequestResponse' || value === 'Event' || value === 'DryRun') return value;
  throw new LambdaError('InvalidParameterValueException', `X-Amz-Invocation-Type must be RequestResponse, Event or DryRun, not ${JSON.stringify(String(value).slice(0, 64))}`);
}

/** The function the path names, or the error Lambda answers for it. */
function targetOf(rawName: string, query: URLSearchParams, functionName: string): void {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawName);
  } catch {
    decoded = '';
  }
  const reference = parseFunctionName(decoded);
  if (!reference) {
    throw new LambdaError('InvalidParameterValueException', `FunctionName ${JSON.stringify(decoded.slice(0, MAX_FUNCTION_NAME))} is not a function name, a partial ARN or an ARN (arn:aws:lambda:<region>:<account>:function:<name>), with an optional :<qualifier>`);
  }
  const queried = query.get('Qualifier') ?? undefined;
  if (reference.qualifier !== undefined && queried !== undefined && queried !== reference.qualifier) {
    throw new LambdaError('InvalidParameterValueException', 'The derived qualifier from the function name does not match the specified qualifier.');
  }
  const qualifier = reference.qualifier ?? queried;
  if (reference.name !== functionName || (qualifier !== undefined && qualifier !== LATEST)) {
    const named = `${reference.name}${qualifier === undefined ? '' : `:${qualifier}`}`;
    throw new LambdaError('ResourceNotFoundException', `Function not found: ${named}${reference.name === functionName ? ` (the only version is ${LATEST})` : ` (this gateway serves ${functionName})`}`);
  }
}

export function lambdaApi(options: LambdaApiOptions): LambdaApi {
  const { logger, accessKeys } = options;
  const now = options.now ?? Date.now;
  const maxEvents = options.maxEventInvocations ?? DEFAULT_MAX_EVENT_INVOCATIONS;
  const background = new Set<Promise<void>>();

  /** The caller's principal from a valid signature; headers first, then the body (bounded) for the signature itself. */
  const authenticate = async (req: IncomingMessage): Promise<{ principal: string; body: Buffer }> => {
    const auth = parseSigV4(req.headers.authorization);
    const signingDate = checkRequestTime(auth, req.headers, 'lambda', now());
    const key = accessKeys.find(auth.accessKeyId);
    if (!key) {
      throw new LambdaError('UnrecognizedClientException', `The security token included in the request is invalid: no access key ${auth.accessKeyId} in spec.functionGateway.accessKeys${accessKeys.size ? '' : ' (none are configured)'}`);
    }
    const secret = key.secret();
    if (Number(req.headers['content-length']) > options.maxPayload) throw new LambdaError('RequestTooLargeException', `Request must be smaller than ${options.maxPayload} bytes for the InvokeFunction operation`);
    let body: Buffer;
    try {
      body = await options.readBody(req, options.maxPayload);
    } catch (err) {
      if (err instanceof InvocationError && err.code === 413) throw new LambdaError('RequestTooLargeException', `Request must be smaller than ${options.maxPayload} bytes for the InvokeFunction operation`);
      throw new LambdaError('InvalidRequestContentException', 'the request body was not completely received');
    }
    const matches = await signatureMatches({ method: req.method ?? 'POST', url: req.url ?? '/', headers: req.headers, body }, auth, signingDate, secret);
    if (!matches) {
      throw new LambdaError('InvalidSignatureException', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.');
    }
    return { principal: key.name, body };
  };

  const checkInvoker = (principal: string) => {
    if (options.verified && !anyMatches(options.verified.invokers, [principal])) {
      throw new LambdaError('AccessDeniedException', `User: ${principal} is not authorized to perform: lambda:InvokeFunction on resource: ${options.functionName}; add it (or a matching pattern) to the Environment's spec.functionGateway.invokers`);
    }
  };

  const parsePayload = (body: Buffer): unknown => {
    try {
      return JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new LambdaError('InvalidRequestContentException', `Could not parse request body into json: ${(err as Error).message}`);
    }
  };

  /** Event and DryRun: the checks `POST /` would answer in `status`, here before anything is accepted. */
  const validate = (payload: unknown, principal: string) => {
    try {
      toRestCall(payload, principal);
    } catch (err) {
      if (!(err instanceof InvocationError)) throw err;
      throw new LambdaError('InvalidRequestContentException', err.message);
    }
  };

  const runInBackground = (payload: unknown, principal: string, requestId: string) => {
    const run = options.invoke(payload, principal, requestId).then(
      (result) => {
        const log = result.status.code >= 400 ? logger.warn.bind(logger) : logger.info.bind(logger);
        log({ reqId: requestId, code: result.status.code, ...(result.status.message ? { message: result.status.message } : {}) }, 'event invocation finished');
      },
      (err: unknown) => {
        const e = err as Error;
        if (err instanceof InvocationError) logger.warn({ reqId: requestId, code: err.code, errorCode: err.errorCode }, `event invocation failed: ${err.message}`);
        else logger.error({ reqId: requestId, err: { message: e?.message, stack: e?.stack } }, 'event invocation failed');
      },
    );
    const tracked = run.finally(() => background.delete(tracked));
    background.add(tracked);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<{ operation?: string; code: number }> => {
    const [path, search = ''] = (req.url ?? '/').split(/\?(.*)/s);
    const match = INVOCATIONS.exec(path);
    let bodyRead = false;
    try {
      if (!match || req.method !== 'POST') {
        throw new LambdaError('UnknownOperationException', 'the function gateway answers only the Lambda Invoke operation: POST /2015-03-31/functions/{FunctionName}/invocations');
      }
      const { principal, body } = await authenticate(req);
      bodyRead = true;
      targetOf(match[1], new URLSearchParams(search), options.functionName);
      checkInvoker(principal);
      const type = invocationTypeOf(req);
      const payload = parsePayload(body);
      const operation = typeof (payload as { operation?: unknown })?.operation === 'string' ? String((payload as { operation: string }).operation).slice(0, 32) : undefined;
      const executed = { 'x-amz-executed-version': LATEST, 'x-amzn-requestid': requestId };
      if (type === 'DryRun') {
        validate(payload, principal);
        res.writeHead(204, executed).end();
        return { operation, code: 204 };
      }
      if (type === 'Event') {
        validate(payload, principal);
        if (background.size >= maxEvents) {
          throw new LambdaError('TooManyRequestsException', `Rate Exceeded: ${maxEvents} Event invocations are already running`, { fields: { Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded' }, headers: { 'retry-after': '1' } });
        }
        runInBackground(payload, principal, requestId);
        res.writeHead(202, { ...executed, 'content-length': '0' }).end();
        return { operation, code: 202 };
      }
      let result: FunctionResult;
      try {
        result = await options.invoke(payload, principal, requestId);
      } catch (err) {
        if (!(err instanceof InvocationError)) throw err;
        if (err.code >= 500) logger.warn({ reqId: requestId, code: err.errorCode }, err.message);
        result = err.toResult();
      }
      const text = JSON.stringify(result);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...executed });
      res.end(text);
      return { operation, code: result.status.code };
    } catch (err) {
      if (err instanceof SigV4Problem || err instanceof LambdaError) {
        const error = err instanceof SigV4Problem ? new LambdaError(err.type, err.message) : err;
        sendLambdaError(res, error, requestId, !bodyRead);
        return { code: error.status };
      }
      if (err instanceof AccessKeyUnreadable) {
        // The gateway's configuration, not the caller: the details go to the log, not to the caller.
        logger.error({ reqId: requestId }, err.message);
        sendLambdaError(res, new LambdaError('ServiceException', `the function gateway cannot read its access keys; quote request id ${requestId} when reporting it`), requestId, !bodyRead);
        return { code: 500 };
      }
      logger.error({ reqId: requestId, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'Lambda invocation failed');
      if (res.headersSent) {
        res.destroy();
        return { code: 500 };
      }
      // A fault of the function itself, as Lambda reports one: 200 with X-Amz-Function-Error.
      const text = JSON.stringify({ errorType: 'InternalError', errorMessage: `internal error; quote request id ${requestId} when reporting it` });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-amz-function-error': 'Unhandled', 'x-amz-executed-version': LATEST, 'x-amzn-requestid': requestId });
      res.end(text);
      return { code: 500 };
    }
  };

  return {
    handle,
    settled: async () => {
      while (background.size) await Promise.allSettled([...background]);
    },
  };
}
