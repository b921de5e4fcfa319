// The request target in origin form (path and query). Node hands an absolute-form target
// (`GET http://host/v1/... HTTP/1.1`, RFC 9112 3.2.2, which a server must accept) to the request
// listener as is; express's parser routes it on its path, and so do the handlers outside express.
import { QUERY_KEY_PARAMETER } from '../auth/bearer.ts';

/** `target` without its scheme and authority when it has them; unchanged otherwise. */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(target);
  if (!authority) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * `target` without any `key` parameter, in any case of its name, percent-decoded as the parsers
 * decode it: a problem's `instance` repeats the request target, and a key pasted into a URL (the
 * calendar's `?key=`, or any other path's by mistake) must never come back in an answer.
 */
export function withoutKeyParameter(target: string): string {
  const q = target.indexOf('?');
  if (q < 0) return target;
  const pairs = target.slice(q + 1).split('&');
  const kept = pairs.filter((pair) => !namesKey(pair));
  if (kept.length === pairs.length) return target;
  const rest = kept.join('&');
  return rest ? `${target.slice(0, q)}?${rest}` : target.slice(0, q);
}

function namesKey(pair: string): boolean {
  const name = pair.split('=', 1)[0]!.replaceAll('+', ' ');
  try {
    return decodeURIComponent(name).toLowerCase() === QUERY_KEY_PARAMETER;
  } catch {
    return false;
  }
}
