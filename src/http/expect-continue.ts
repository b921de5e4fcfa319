// `Expect: 100-continue` (node:http 'checkContinue'): Node's default sends `100 Continue` to every
// such request at once, inviting the body before anything is checked. Here the key is checked
// first: a request to a path that takes a key gets `100 Continue` only when its key is live and
// holds a scope the path needs; otherwise no 100 is sent and the request goes on to its handler,
// which answers 401/403 (or 503 while keys cannot be looked up) and closes the connection without
// reading the body. Paths without a key (health, metrics, documents) continue at once, as before.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GRAPHQL_SCOPES, type Scope } from '../auth/api-keys.ts';
import { authenticate, requireAnyScope } from '../auth/bearer.ts';
import type { KeyCache } from '../auth/key-cache.ts';
import { originForm } from './request-target.ts';
import { V1_PREFIX, v1KeyScopes } from './v1/routes.ts';

/** The scopes of which a key must hold one for `path`; null: the path takes no key. */
function scopesFor(path: string): readonly Scope[] | null {
  if (path === '/graphql') return GRAPHQL_SCOPES;
  if (path.startsWith(V1_PREFIX)) return v1KeyScopes(path);
  return null;
}

/** The 'checkContinue' listener: sends 100 when the key allows it, then hands the request to `handle`. */
export function checkKeyBeforeContinue(
  keys: KeyCache,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = originForm(req.url ?? '');
    const scopes = scopesFor(url.split('?', 1)[0]!);
    if (!scopes) {
      res.writeContinue();
      return handle(req, res);
    }
    authenticate(req.headersDistinct.authorization, null, keys)
      .then((principal) => {
        requireAnyScope(principal, scopes);
        res.writeContinue();
      })
      .catch(() => {}) // the handler checks the key again and answers the refusal
      .finally(() => handle(req, res));
  };
}
