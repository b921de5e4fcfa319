// The JSON-lines files of `walk` and `sync`: one record per line, lines ended by "\n" only.
// JSON.stringify leaves U+2028 and U+2029 as they are (valid JSON, and the service may serve them in
// any text), but line readers such as Node's readline and Python's splitlines() end a line at each:
// a record holding one was read back as fragments (sync refused its own copy; walk's de-duplication
// kept the wrong lines). They are written escaped, and read back split at "\n" alone, so a copy an
// earlier version wrote with them raw is read too.
import type { Readable } from 'node:stream';

const LINE_SEPARATORS = /[\u2028\u2029]/g;

/** `value` as one line of JSON, without its "\n": nothing in it a line reader takes for a line end. */
export function jsonLine(value: unknown): string {
  return escapeSeparators(JSON.stringify(value));
}

/** A line of JSON with U+2028 and U+2029 escaped (in JSON text they can only be inside strings). */
export function escapeSeparators(line: string): string {
  return line.replace(LINE_SEPARATORS, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'));
}

/** The lines of a UTF-8 stream, split at "\n" only (a "\r" before it is dropped); a last line without one too. */
export async function* readLines(input: Readable): AsyncGenerator<string> {
  let rest = '';
  input.setEncoding('utf8');
  for await (const chunk of input as AsyncIterable<string>) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) yield line.endsWith('\r') ? line.slice(0, -1) : line;
  }
  if (rest) yield rest.endsWith('\r') ? rest.slice(0, -1) : rest;
}
