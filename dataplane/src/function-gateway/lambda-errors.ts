/**
 * The Lambda Invoke API's errors as AWS sends them, so that AWS SDKs raise the exception they
 * know: the type in the `x-amzn-ErrorType` header (which the SDKs read first), and a JSON body
 * with the fields of the SDK's model of that error — `Type` ("User" or "Service") and the message
 * under `Message` or `message` as the model spells it (e.g. ResourceNotFoundException has
 * `Message`, InvalidRequestContentException `message`). Errors of AWS's request-signing layer
 * (InvalidSignatureException, …) carry only `message`.
 */
import type { ServerResponse } from 'node:http';

interface ErrorShape {
  status: number;
  /** The message field as the SDK's model names it. */
  messageField: 'Message' | 'message';
  type?: 'User' | 'Service';
}

const SHAPES = {
  ResourceNotFoundException: { status: 404, messageField: 'Message', type: 'User' },
  InvalidRequestContentException: { status: 400, messageField: 'message', type: 'User' },
  InvalidParameterValueException: { status: 400, messageField: 'message', type: 'User' },
  RequestTooLargeException: { status: 413, messageField: 'message', type: 'User' },
  TooManyRequestsException: { status: 429, messageField: 'message', type: 'User' },
  ServiceException: { status: 500, messageField: 'Message', type: 'Service' },
  AccessDeniedException: { status: 403, messageField: 'Message' },
  UnknownOperationException: { status: 404, messageField: 'message' },
  MissingAuthenticationTokenException: { status: 403, messageField: 'message' },
  IncompleteSignatureException: { status: 400, messageField: 'message' },
  InvalidSignatureException: { status: 403, messageField: 'message' },
  UnrecognizedClientException: { status: 403, messageField: 'message' },
} satisfies Record<string, ErrorShape>;

export type LambdaErrorType = keyof typeof SHAPES;

export class LambdaError extends Error {
  constructor(
    readonly type: LambdaErrorType,
    message: string,
    /** More body fields (TooManyRequestsException's `Reason`) and headers (`retry-after`). */
    readonly extra: { fields?: Record<string, string>; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }

  get status(): number {
    return SHAPES[this.type].status;
  }

  body(): Record<string, string> {
    const shape: ErrorShape = SHAPES[this.type];
    return { ...(shape.type ? { Type: shape.type } : {}), [shape.messageField]: this.message, ...this.extra.fields };
  }
}

/** Writes the error; `close`: the request's body was not read, so the connection ends with the answer. */
export function sendLambdaError(res: ServerResponse, error: LambdaError, requestId: string, close = false): void {
  const text = JSON.stringify(error.body());
  res.writeHead(error.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-errortype': error.type,
    'x-amzn-requestid': requestId,
    ...(close ? { connection: 'close' } : {}),
    ...error.extra.headers,
  });
  res.end(text);
}
