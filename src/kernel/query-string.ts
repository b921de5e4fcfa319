// The query string of a /v1 request, parsed as node:querystring does (a repeated parameter is an
// array), but refused when a name or value is not valid percent-encoding of UTF-8 text: querystring
// keeps a malformed escape as it is ("%zz") and turns bytes that are not UTF-8 into U+FFFD, so
// `?city=%zz` matched nothing and answered 200 with an empty list, hiding the caller's encoding bug.
// Refused too, whatever the parameter, is a name or value holding a NUL (`%00`): no stored text can
// hold one (PostgreSQL text cannot), and `q=a%00b` searched for "a b" and answered 200.
import { type ParsedUrlQuery, parse } from 'node:querystring';
import { AppError, type InvalidParam, badInput } from './errors.ts';

/** Longest parameter name quoted back in a problem (the rest of a long name says nothing more). */
const NAME_SHOWN = 64;
const NUL = '\u0000';
const NUL_REASON = 'must not contain NUL characters';

/** The parameters of `query` (the text after `?`); a 400 names each one that is not valid percent-encoding or holds a NUL. */
export function parseQueryString(query: string): ParsedUrlQuery {
  const badEncoding = new Set<string>();
  const withNul = new Set<string>();
  for (const pair of query.split('&')) {
    if (!pair.includes('%') && !pair.includes(NUL)) continue;
    const equals = pair.indexOf('=');
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const shownName = decoded(name);
    const value = equals === -1 ? '' : decoded(pair.slice(equals + 1));
    // A NUL in a name is shown as it was sent (%00), not as a control character; a name that does not
    // decode, as it was sent (`%ff`, not U+FFFD).
    const shown = (shownName ?? name).replaceAll(NUL, '%00').slice(0, NAME_SHOWN);
    if (shownName === null || value === null) badEncoding.add(shown);
    else if (shownName.includes(NUL) || value.includes(NUL)) withNul.add(shown);
  }
  // Every parameter at fault at once, each with its reason.
  const nulProblems: InvalidParam[] = [...withNul].map((name) => ({ name, reason: NUL_REASON }));
  if (badEncoding.size > 0) {
    const encodingError = badQueryEncoding([...badEncoding]);
    throw nulProblems.length === 0 ? encodingError : badInput([...encodingError.invalidParams!, ...nulProblems]);
  }
  if (nulProblems.length > 0) throw badInput(nulProblems);
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

/** Query parameters (their names) whose name or value is not valid percent-encoding of UTF-8 text. */
export const badQueryEncoding = (names: readonly string[]): AppError =>
  new AppError('BAD_USER_INPUT', `${names.join(', ')}: not valid percent-encoding of UTF-8 text (escape "%" as %25)`, {
    invalidParams: names.map((name) => ({ name, reason: 'is not valid percent-encoding of UTF-8 text' })),
  });
