// The query string of a /v1 request, parsed as node:querystring does (a repeated parameter is an
// array), but refused when a name or value is not valid percent-encoding of UTF-8 text: querystring
// keeps a malformed escape as it is ("%zz") and turns bytes that are not UTF-8 into U+FFFD, so
// `?city=%zz` matched nothing and answered 200 with an empty list, hiding the caller's encoding bug.
import { type ParsedUrlQuery, parse, unescape } from 'node:querystring';
import { badQueryEncoding } from '../problem.ts';

/** Longest parameter name quoted back in a problem (the rest of a long name says nothing more). */
const NAME_SHOWN = 64;

/** The parameters of `query` (the text after `?`); a 400 names each one that is not valid percent-encoding. */
export function parseQueryString(query: string): ParsedUrlQuery {
  const bad = new Set<string>();
  for (const pair of query.split('&')) {
    if (!pair.includes('%')) continue;
    const equals = pair.indexOf('=');
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const shownName = decoded(name);
    if (shownName === null || (equals !== -1 && decoded(pair.slice(equals + 1)) === null))
      bad.add((shownName ?? unescape(name)).slice(0, NAME_SHOWN));
  }
  if (bad.size > 0) throw badQueryEncoding([...bad]);
  return parse(query);
}

/** `text` percent-decoded as a form value ("+" is a space), or null when it is not valid percent-encoding of UTF-8. */
function decoded(text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return null;
  }
}
