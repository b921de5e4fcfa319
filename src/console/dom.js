// Small DOM helpers: elements from tag, attributes and children (text is always text, never HTML),
// SVG elements for the charts, and the console's formats. `put` and `add` replace and append children
// as h() does: null, undefined and false are left out (DOM's own replaceChildren and append would
// show them as the text "null").

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  return fill(el, attrs, children);
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  return fill(el, attrs, children);
}

const nodes = (children) =>
  children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false);

/** Replaces the children of `el` (null, undefined and false left out). */
export const put = (el, ...children) => el.replaceChildren(...nodes(children));
/** Appends to `el` (null, undefined and false left out). */
export const add = (el, ...children) => el.append(...nodes(children));

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of nodes(children)) el.append(child instanceof Node ? child : String(child));
  return el;
}

/** What is shown for a value the service left empty. */
export const NONE = '—';

/** "1 attempt", "3 attempts": a count with its noun. */
export const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A button that runs `run` as an action of the page (ctx.act: its message, then a reload). */
export const actionButton = (ctx, label, run) => h('button', { type: 'button', onclick: () => ctx.act(run) }, label);

/** How long ago (or how far ahead) `iso` is from `now`: "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago", "in 5 min". */
export function ago(iso, now = Date.now()) {
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  const s = Math.abs(seconds);
  if (s < 10) return 'just now';
  const span =
    s < 60
      ? `${s} s`
      : s < 3600
        ? `${Math.floor(s / 60)} min`
        : s < 86400
          ? `${Math.floor(s / 3600)} h`
          : `${Math.floor(s / 86400)} d`;
  return seconds < 0 ? `in ${span}` : `${span} ago`;
}

/** A timestamp as text: "2026-11-25 19:16:15 UTC · 5 min ago" (or a dash). */
export function whenText(iso) {
  if (!iso) return NONE;
  if (Number.isNaN(Date.parse(iso))) return iso;
  return `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC · ${ago(iso)}`;
}

/** A timestamp as a <time> element, on one line (console.css): whenText's text, the ISO instant as its datetime. */
export const when = (iso) => (iso ? h('time', { class: 'when', datetime: iso }, whenText(iso)) : NONE);

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
