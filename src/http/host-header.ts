// RFC 9112 section 3.2: a server MUST answer 400 to an HTTP/1.1 request without a Host header, with
// more than one, or with one that is not a valid host[:port]. Node checks only the first, and answers
// it itself with a bare 400 and no body; it is told not to (http-server.ts, requireHostHeader: false),
// so that all three are answered here, before routing, as problem+json like every other refusal.
// Proxies that disagree on which of two Host lines counts are the reason the rule exists.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { writeProblem } from './problem.ts';
import { trackRequest, UNMATCHED_ROUTE } from './request-context.ts';

// host [ ":" port ] of RFC 3986: an IP literal in brackets, or a reg-name (IPv4 addresses included).
const HOST = /^(?:\[[0-9A-Za-z:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

/** Why the request's Host header is refused, or null when it is fine. */
export function hostRefusal(req: IncomingMessage): AppError | null {
  const hosts = req.headersDistinct.host ?? [];
  const reason =
    hosts.length > 1
      ? 'must be sent once'
      : hosts.length === 0
        ? req.httpVersionMajor === 1 && req.httpVersionMinor >= 1
          ? 'is required in HTTP/1.1'
          : null
        : HOST.test(hosts[0]!)
          ? null
          : 'must be a host name or address, with an optional port';
  if (reason === null) return null;
  return new AppError('BAD_USER_INPUT', `The Host header ${reason}`, {
    invalidParams: [{ name: 'Host', reason }],
    headers: { Connection: 'close' },
  });
}

/**
 * Answers a request refused before routing (its Host, an unknown Expect) as problem+json, tracked like
 * any other (access line, metrics, the caller's request id); its instance names this occurrence: the
 * path may be anything.
 */
export function answerBeforeRouting(logger: Logger, req: IncomingMessage, res: ServerResponse, error: AppError): void {
  const { requestId } = trackRequest(logger, req, res, {
    started: process.hrtime.bigint(),
    route: () => UNMATCHED_ROUTE,
    path: () => '',
  });
  writeProblem(res, `urn:uuid:${requestId}`, error);
}
