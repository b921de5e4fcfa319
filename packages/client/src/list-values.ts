// Several values of one list parameter, as the service reads them: comma-separated, a comma or a
// backslash inside a value written with a backslash before it ("Acme\, Inc."); any other backslash
// stands for itself.

/** `values` as one parameter value. */
export const listValue = (values: readonly string[]): string =>
  values.map((v) => v.replace(/[\\,]/g, (c) => `\\${c}`)).join(',');

/** The values of one parameter value (listValue read back). */
export function splitListValue(value: string): string[] {
  const values: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    const next = value[i + 1];
    if (c === '\\' && (next === ',' || next === '\\')) {
      current += next;
      i++;
    } else if (c === ',') {
      values.push(current);
      current = '';
    } else current += c;
  }
  values.push(current);
  return values;
}
