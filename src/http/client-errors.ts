// What Node's HTTP parser refuses before any route sees the request (headers too large, malformed
// HTTP, a request not received within the timeouts) Node answers itself with a bare status line
// and no body. This clientError listener answers the same statuses as problem+json instead, with
// Connection: close, whenever the socket can still carry an answer; otherwise it only closes it.
import { randomUUID } from 'node:crypto';
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode, InvalidParam } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { PROBLEM_CONTENT_TYPE, problemBody } from './problem.ts';
import { REQUEST_ID_HEADER } from './request-context.ts';

type ClientError = Error & { code?: string };

const ANSWERS: Record<string, { code: ErrorCode; detail: string; invalidParams?: InvalidParam[] }> = {
  HPE_HEADER_OVERFLOW: {
    code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
    detail: 'The request headers are larger than this server accepts',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    code: 'PAYLOAD_TOO_LARGE',
    detail: 'The chunk extensions of the request body are larger than this server accepts',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', detail: 'The request was not received in time' },
};
const MALFORMED = {
  code: 'BAD_USER_INPUT',
  detail: 'The request is not valid HTTP/1.1',
  invalidParams: [{ name: 'request', reason: 'is not valid HTTP/1.1' }],
} as const;

/** The raw HTTP/1.1 response for a parser error; `instance` names this occurrence (no path is known). */
export function clientErrorResponse(
  errorCode: string | undefined,
  requestId: string,
): { status: number; bytes: string } {
  const answer = (errorCode && ANSWERS[errorCode]) || MALFORMED;
  const { status, body } = problemBody(answer.code, answer.detail, `urn:uuid:${requestId}`, answer.invalidParams);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${REQUEST_ID_HEADER}: ${requestId}`,
    'Connection: close',
  ];
  return { status, bytes: `${head.join('\r\n')}\r\n\r\n${body}` };
}

export function answerClientError(logger: Logger): (error: ClientError, socket: Duplex) => void {
  return (error, socket) => {
    // The same test as Node's own handler: no answer once a response has begun on this connection
    // (it would corrupt it) or when the peer is gone. _httpMessage is the response Node attached.
    const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || current?.headersSent) return void socket.destroy();
    const requestId = randomUUID();
    const { status, bytes } = clientErrorResponse(error.code, requestId);
    logger.info({ requestId, status, code: error.code }, 'request refused by the HTTP parser');
    socket.end(bytes, () => socket.destroy());
  };
}
