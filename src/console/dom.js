// Small DOM helpers: elements from tag, attributes and children (text is always text, never HTML),
// SVG elements for the charts, and the console's formats.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  return fill(el, attrs, children);
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  return fill(el, attrs, children);
}

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined && child !== false)
      el.append(child instanceof Node ? child : String(child));
  return el;
}

/** A timestamp as "2026-11-25 19:16:15 UTC" (or a dash). */
export const time = (iso) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : '–');

/** A table with a header row and one row per item; `columns`: [label, (item) => cell content]. */
export function table(columns, items, empty = 'Nothing to show.', caption) {
  if (items.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'table',
    {},
    caption ? h('caption', {}, caption) : null,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map(([label]) => h('th', { scope: 'col' }, label)),
      ),
    ),
    h(
      'tbody',
      {},
      items.map((item) =>
        h(
          'tr',
          {},
          columns.map(([, cell]) => h('td', {}, cell(item))),
        ),
      ),
    ),
  );
}

/** What to show instead of a section the key may not see. */
export function missingScope(scope, what) {
  return h(
    'p',
    { class: 'missing-scope' },
    `To ${what}, the API key needs the "${scope}" scope; this key does not have it.`,
  );
}
