// The request target in origin form (path and query). Node hands an absolute-form target
// (`GET http://host/v1/... HTTP/1.1`, RFC 9112 3.2.2, which a server must accept) to the request
// listener as is; express's parser routes it on its path, and so do the handlers outside express.
import { holdsKey, redactKeys } from '../auth/api-keys.ts';
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
 * decode it, and without any other parameter or path segment holding something with a key's form
 * (a key sent under a misspelt name, or as a bare parameter or segment): a problem's `instance`
 * repeats the request target, and a key pasted into a URL (the calendar's `?key=`, or any other
 * path's by mistake) must never come back in an answer.
 */
export function withoutKeys(target: string): string {
  // The common case (every access log line): no escape, nothing of a key's form, no `key` parameter.
  if (!target.includes('%') && !target.includes('lods_') && !/[?&]key(?:[=&]|$)/i.test(target)) return target;
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const safePath = path
    .split('/')
    .map((segment) => (holdsKeyDecoded(segment) ? REDACTED : segment))
    .join('/');
  if (q < 0) return safePath;
  const pairs = target.slice(q + 1).split('&');
  const kept = pairs.filter((pair) => !namesKey(pair) && !holdsKeyDecoded(pair));
  const rest = kept.join('&');
  return rest ? `${safePath}?${rest}` : safePath;
}

const REDACTED = '[redacted]';

function namesKey(pair: string): boolean {
  const name = pair.split('=', 1)[0]!.replaceAll('+', ' ');
  try {
    return decodeURIComponent(name).toLowerCase() === QUERY_KEY_PARAMETER;
  } catch {
    return false;
  }
}

/** Whether `text` holds a key as sent, or percent-encoded once or more (up to three times). */
const holdsKeyDecoded = (text: string): boolean => formHoldingKey(text) !== null;

/** `text`, or its first decoding (up to three) that holds a key's form; null when none does. */
function formHoldingKey(text: string): string | null {
  for (let i = 0; i < 4; i++) {
    if (holdsKey(text)) return text;
    const decoded = leniently(text);
    if (decoded === text) return null;
    text = decoded;
  }
  return null;
}

/**
 * `text` with every valid percent-escape decoded: each run of escapes as UTF-8, or, when the run is
 * not valid UTF-8 (`%FF%6Cods_...`), its ASCII escapes one by one (a key is ASCII); the rest (a
 * stray `%`, escapes of bytes that are not UTF-8) as it is.
 */
function leniently(text: string): string {
  return text.replaceAll('+', ' ').replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%[0-7][0-9A-Fa-f]/g, (escape) => String.fromCharCode(Number.parseInt(escape.slice(1), 16)));
    }
  });
}

/**
 * `text` with every key in it redacted, also one percent-encoded once or more (up to three times:
 * then the text is shown decoded as far as it took to find it): a parameter's name is quoted back as
 * it was sent when it does not decode (`%6Cods_...%FF`).
 */
export function redactKeysInAnyEncoding(text: string): string {
  if (!text.includes('%') && !text.includes('lods_')) return text;
  const form = formHoldingKey(text);
  return form === null ? text : redactKeys(form);
}
