// A JSON body may escape half of a UTF-16 surrogate pair ("\ud800") where it stands alone: JSON.parse
// makes it a string no UTF-8 can hold, and the driver writes U+FFFD in its place, so what the caller
// sent would silently not be what is searched or stored (REST refuses the same text, `%ED%A0%80`,
// as a query string that is not UTF-8). Such a body is refused: 400, BAD_USER_INPUT, naming where.
// Only an escape can make one (raw bytes that are not UTF-8 are refused first), and JSON.stringify
// escapes nothing else outside control characters: the parsed body is walked only when its text
// holds a surrogate's escape.

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/** Whether the raw body escapes a surrogate (a pair's half or a lone one): its parsed values need the walk. */
export function escapesSurrogates(body: Buffer): boolean {
  return body.includes('\\u') && SURROGATE_ESCAPE.test(body.toString('latin1'));
}

/** Where `value` holds a string (or an object key) with a lone surrogate, as a path (`variables.input.title`); null when nowhere. */
export function loneSurrogateAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const at = loneSurrogateAt(item, `${path}[${i}]`);
      if (at) return at;
    }
    return null;
  }
  if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      const at = key.isWellFormed() ? loneSurrogateAt(item, `${path}.${key}`) : `${path} (a name)`;
      if (at) return at;
    }
  return null;
}
