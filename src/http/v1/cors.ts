// CORS for /v1 (off unless CORS_ORIGINS names origins): a browser page on one of those exact origins
// may read /v1 with its API key in Authorization. A preflight (OPTIONS with Origin and
// Access-Control-Request-Method) from such an origin is answered 204 here with what the browser
// needs; any other request from it gets Access-Control-Allow-Origin (that origin, never `*`) and the
// response headers a client reads exposed. Credentials (cookies) are never allowed: the key is sent
// explicitly. Other origins get no CORS header at all (their browsers refuse the answer), and with
// CORS off nothing changes (OPTIONS stays 405). The dispatcher (dispatcher.ts) runs it first for
// every path under /v1/, known or not.
import type { IncomingMessage, ServerResponse } from 'node:http';

const ALLOW_METHODS = 'GET, HEAD';
const ALLOW_HEADERS = 'Authorization, If-None-Match, X-Request-Id';
const EXPOSE_HEADERS = 'ETag, RateLimit, RateLimit-Policy, Retry-After, X-Request-Id';
// How long a browser may reuse a preflight's answer.
const MAX_AGE_S = '600';

/**
 * The request listener of CORS: true when it answered (a preflight, after `answering()`, which gives
 * it its request id, access line and metrics as any request); otherwise it only set headers.
 */
export function cors(
  origins: readonly string[],
): ((req: IncomingMessage, res: ServerResponse, answering: () => void) => boolean) | null {
  if (origins.length === 0) return null;
  const allowed = new Set(origins);
  return (req, res, answering) => {
    // The answer depends on Origin: caches must keep one per origin.
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      answering();
      res.statusCode = 204;
      res.setHeader('Access-Control-Allow-Methods', ALLOW_METHODS);
      res.setHeader('Access-Control-Allow-Headers', ALLOW_HEADERS);
      res.setHeader('Access-Control-Max-Age', MAX_AGE_S);
      res.end();
      return true;
    }
    res.setHeader('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    return false;
  };
}
