// GET /problems/<slug>: the page a problem's `type` URI resolves to, one per error code. It says
// what the problem means and what to do about it: a small HTML page for a browser, JSON (the same
// words) for a client asking for application/json or anything (*/*). Public, like /docs.
import type { Request, Response, Router } from 'express';
import { ERROR_CODES, type ErrorCode } from '../kernel/errors.ts';
import { exactRouter } from './exact-router.ts';
import { methodNotAllowed } from './problem.ts';

/** What each problem means and what to do; a missing code fails the typecheck. */
export const PROBLEM_DESCRIPTIONS: Record<ErrorCode, string> = {
  BAD_USER_INPUT:
    'A parameter or input field is not acceptable: out of range, not an integer, repeated, malformed (an id that is not a UUID, a cursor the service did not make), or a GraphQL input that fails validation. `invalidParams` names each one and why; fix them and send the request again.',
  UNAUTHENTICATED:
    'No API key was sent, or it is malformed, unknown or revoked. Send `Authorization: Bearer <API_KEY>` with a key the operators gave you; `WWW-Authenticate` says what was wrong.',
  FORBIDDEN:
    'The API key is valid but lacks the scope this request needs (`catalog:read` for /v1, a GraphQL scope for /graphql). Ask the operators for a key with that scope.',
  NOT_FOUND:
    'Nothing is at this path, or the record is not visible here (unknown, draft, archived or deleted). Paths match exactly: no trailing slash, lower case.',
  METHOD_NOT_ALLOWED: 'The path exists but does not accept this method. `Allow` lists the methods it does accept.',
  REQUEST_TIMEOUT:
    'The request headers or body did not arrive in time (HTTP_HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS). Send the whole request promptly; the connection is closed.',
  INVALID_STATE_TRANSITION:
    'The operation does not apply to the current state, such as archiving a draft or redelivering to a disabled receiver. Over GraphQL it is an error with this code in an HTTP 200 answer; change the state first (publish, enable) or choose another operation.',
  CURSOR_EXPIRED:
    'The feed cursor is older than the retained events, so the changes after it can no longer be listed. Start again from `GET /v1/events/head` after a full walk of the catalog.',
  PAYLOAD_TOO_LARGE:
    'The request body is larger than this endpoint accepts (GRAPHQL_MAX_BODY_BYTES for /graphql). Send a smaller document or split a bulk mutation.',
  UNSUPPORTED_MEDIA_TYPE:
    'The body is not JSON where JSON is required, or uses an encoding the service does not read. Send `Content-Type: application/json` (optionally gzip, deflate or br).',
  EXPECTATION_FAILED:
    'The request carries an `Expect` header other than `100-continue`, the only expectation this service understands. Send the request without it; the connection is closed.',
  QUERY_TOO_COMPLEX:
    'The GraphQL operation is estimated to cost more than the service allows (a page costs its limit), or is too deep or uses too many aliases. Ask for smaller pages or fewer fields.',
  REQUEST_HEADER_FIELDS_TOO_LARGE:
    'The request headers are larger than the HTTP parser accepts (16 KiB). Send fewer or shorter headers; the connection is closed.',
  RATE_LIMITED:
    'The API key has made more requests than its limit allows in the window. Wait the seconds given in `Retry-After` (and pace by the `RateLimit` header) before trying again.',
  INTERNAL_SERVER_ERROR:
    'A bug in the service. Nothing about it is returned; the details are logged under the `X-Request-Id` of this answer: quote it when reporting the problem.',
  SERVICE_UNAVAILABLE:
    'The service cannot answer right now: the database is unreachable or too many long polls are waiting. It recovers by itself; retry after the seconds given in `Retry-After`.',
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const withCode = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');

function page(code: ErrorCode): string {
  const { status, title, slug } = ERROR_CODES[code];
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)} (${status})</title></head>
<body>
  <h1>${escapeHtml(title)}</h1>
  <p>Problem type <code>/problems/${slug}</code>, HTTP status ${status}, code <code>${code}</code>.</p>
  <p>${withCode(PROBLEM_DESCRIPTIONS[code])}</p>
  <p>Every problem answer also carries <code>detail</code> (this occurrence) and <code>instance</code> (the request path and query); quote its <code>X-Request-Id</code> when reporting it.</p>
</body>
</html>
`;
}

const codeOf = (slug: string) =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).find((code) => ERROR_CODES[code].slug === slug);

export function problemPageRoutes(): Router {
  const router = exactRouter();
  router.get('/problems/:slug', (req: Request<{ slug: string }>, res: Response, next) => {
    const code = codeOf(req.params.slug);
    if (!code) return next();
    const { status, title } = ERROR_CODES[code];
    res.set({ 'Cache-Control': 'public, max-age=300', Vary: 'Accept' });
    if (req.accepts(['application/json', 'text/html']) === 'text/html')
      return void res.type('text/html; charset=utf-8').send(page(code));
    res.json({ type: `/problems/${req.params.slug}`, title, status, code, description: PROBLEM_DESCRIPTIONS[code] });
  });
  const notGet = methodNotAllowed(['GET', 'HEAD']);
  router.all('/problems/:slug', (req: Request<{ slug: string }>, res: Response, next) =>
    codeOf(req.params.slug) ? notGet(req, res, next) : next(),
  );
  return router;
}
