// The text of an iCalendar object (RFC 5545): content lines folded at 75 octets, TEXT and URI values,
// UTC DATE-TIMEs (calendar-ics.ts, ics-session-times.ts).

export const CRLF = '\r\n';
/** RFC 5545 3.1: lines are folded to at most 75 octets, without the line break. */
const LINE_OCTETS = 75;

// The form every stored timestamp has (the renderer writes toISOString()'s).
const ISO_UTC = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?Z$/;

/**
 * A UTC DATE-TIME (RFC 5545 3.3.5, form #2), to the second (iCalendar has no fractions):
 * 2027-03-01T09:00:00.750Z is 20270301T090000Z. Read from the text, without a Date, when it has
 * the stored form; any other ISO timestamp through Date.
 */
export function utc(iso: string): string {
  const m = ISO_UTC.exec(iso) ?? ISO_UTC.exec(new Date(Math.floor(Date.parse(iso) / 1000) * 1000).toISOString());
  if (!m) throw new RangeError(`not a timestamp of years 0000 to 9999: ${iso}`);
  return `${m[1]}${m[2]}${m[3]}T${m[4]}${m[5]}${m[6]}Z`;
}

// Control characters a TEXT value cannot hold (RFC 5545 3.3.11: any but HTAB; line breaks are escaped).
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/** A TEXT value (RFC 5545 3.3.11): backslash, semicolon, comma and line breaks escaped, other controls dropped. */
export function escapeText(text: string): string {
  return text
    .replace(/\r\n|\r|\n/g, '\n')
    .replace(CONTROLS, '')
    .replace(/[\\;,\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** A URI value: as stored (checked http(s) URLs), without the controls a content line cannot hold. */
export const uriValue = (url: string): string => url.replace(CONTROLS, '').replace(/[\r\n]/g, '');

/**
 * One content line, folded (RFC 5545 3.1): at most 75 octets of UTF-8 per line without the CRLF,
 * each continuation starting with one space; a fold never splits a character's bytes.
 */
export function contentLine(line: string): string {
  const octets = Buffer.byteLength(line);
  if (octets <= LINE_OCTETS) return line + CRLF;
  // As many octets as characters: every one is ASCII, one octet, so the folds are plain slices.
  if (octets === line.length) {
    let folded = line.slice(0, LINE_OCTETS);
    for (let at = LINE_OCTETS; at < line.length; at += LINE_OCTETS - 1)
      folded += `${CRLF} ${line.slice(at, at + LINE_OCTETS - 1)}`;
    return folded + CRLF;
  }
  const out: string[] = [];
  let current = '';
  let used = 0;
  for (const char of line) {
    const size = utf8Octets(char.codePointAt(0)!);
    if (used + size > LINE_OCTETS) {
      out.push(current);
      current = ' ';
      used = 1;
    }
    current += char;
    used += size;
  }
  out.push(current);
  return out.join(CRLF) + CRLF;
}

const utf8Octets = (codePoint: number): number =>
  codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
