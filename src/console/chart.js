// A receiver's attempts per hour over the last 24 h (webhookDeliveryHistory), as SVG built here (no
// chart library; colours from console.css classes, no inline style: CSP). Two sizes: a small success
// rate chart per receiver in the receivers table (bar height = share of the hour's attempts that
// succeeded), and on a receiver's page a chart with axes: one bar per hour, its height the hour's
// attempts, successes (green, at the bottom) and the attempts that did not succeed (red, on top)
// stacked, each hour's numbers in its tooltip.
import { h, plural, svg } from './dom.js';

const BAR = 6;
const HEIGHT = 28;

const total = (hours, field) => hours.reduce((n, hour) => n + hour[field], 0);
/** "03:00" of an hour's ISO start. */
const clock = (iso) => iso.slice(11, 16);

export function successChart(hours) {
  const attempts = total(hours, 'attempts');
  const successes = total(hours, 'successes');
  const summary =
    attempts === 0
      ? 'no attempts in the last 24 h'
      : `${successes} of ${attempts} attempts succeeded in the last 24 h (${Math.round((100 * successes) / attempts)} %)`;
  const bars = hours.map((hour, i) => {
    const rate = hour.attempts === 0 ? null : hour.successes / hour.attempts;
    const height = rate === null ? 2 : Math.max(2, Math.round(rate * (HEIGHT - 2)));
    const kind = rate === null ? 'none' : rate === 1 ? 'ok' : rate === 0 ? 'fail' : 'partial';
    const label = `${clock(hour.hour)} UTC: ${hour.attempts === 0 ? 'no attempts' : `${hour.successes}/${hour.attempts} succeeded`}`;
    return svg(
      'rect',
      { x: i * BAR, y: HEIGHT - height, width: BAR - 1, height, class: `bar ${kind}` },
      svg('title', {}, label),
    );
  });
  return svg(
    'svg',
    {
      class: 'success-chart',
      width: hours.length * BAR,
      height: HEIGHT,
      viewBox: `0 0 ${hours.length * BAR} ${HEIGHT}`,
      role: 'img',
      'aria-label': summary,
    },
    svg('title', {}, summary),
    bars,
  );
}

export function successText(hours) {
  const attempts = total(hours, 'attempts');
  const successes = total(hours, 'successes');
  return attempts === 0 ? 'no attempts' : `${Math.round((100 * successes) / attempts)} % of ${attempts}`;
}

// The receiver page's chart, in viewBox units (it scales to the page's width).
const STEP = 28;
const GAP = 6;
const PLOT = 140;
const LEFT = 34;
const TOP = 8;
const BOTTOM = 22;

/** The smallest of 1, 2, 5, 10, 20, 50, ... at least `n` (the top of the y axis). */
function niceMax(n) {
  for (let scale = 1; ; scale *= 10) for (const step of [1, 2, 5]) if (step * scale >= n) return step * scale;
}

/** One hour's tooltip: "03:00–04:00 UTC: 5 attempts, 4 succeeded, 1 did not". */
function hourText(hour) {
  const end = new Date(Date.parse(hour.hour) + 3_600_000).toISOString();
  const span = `${clock(hour.hour)}–${clock(end)} UTC`;
  if (hour.attempts === 0) return `${span}: no attempts`;
  return `${span}: ${plural(hour.attempts, 'attempt')}, ${hour.successes} succeeded, ${hour.attempts - hour.successes} did not`;
}

/** The receiver page's 24 h chart with its legend and totals (a <figure>). */
export function hourlyChart(hours) {
  const attempts = total(hours, 'attempts');
  const successes = total(hours, 'successes');
  const top = niceMax(Math.max(1, ...hours.map((hour) => hour.attempts)));
  const y = (n) => TOP + PLOT - (n / top) * PLOT;
  const width = LEFT + hours.length * STEP;
  const grid = [0, top / 2, top].map((n) => [
    svg('line', { class: 'grid', x1: LEFT, x2: width, y1: y(n), y2: y(n) }),
    svg('text', { class: 'axis', x: LEFT - 6, y: y(n) + 4, 'text-anchor': 'end' }, Number.isInteger(n) ? n : ''),
  ]);
  const bars = hours.map((hour, i) => {
    const x = LEFT + i * STEP + GAP / 2;
    const failed = hour.attempts - hour.successes;
    return svg(
      'g',
      { class: 'hour' },
      svg('title', {}, hourText(hour)),
      svg('rect', { class: 'hit', x: x - GAP / 2, y: TOP, width: STEP, height: PLOT }),
      hour.attempts === 0
        ? svg('rect', { class: 'bar none', x, y: y(0) - 1, width: STEP - GAP, height: 1 })
        : [
            svg('rect', {
              class: 'bar ok',
              x,
              y: y(hour.successes),
              width: STEP - GAP,
              height: y(0) - y(hour.successes),
            }),
            svg('rect', { class: 'bar fail', x, y: y(hour.attempts), width: STEP - GAP, height: y(0) - y(failed) }),
          ],
      i % 3 === 0
        ? svg(
            'text',
            { class: 'axis', x: x + (STEP - GAP) / 2, y: TOP + PLOT + 16, 'text-anchor': 'middle' },
            clock(hour.hour),
          )
        : null,
    );
  });
  const summary =
    attempts === 0
      ? 'No attempts in the last 24 hours.'
      : `${successes} of ${plural(attempts, 'attempt')} succeeded in the last 24 hours (${Math.round((100 * successes) / attempts)} %); ${attempts - successes} did not.`;
  return h(
    'figure',
    { class: 'hourly' },
    svg(
      'svg',
      {
        class: 'hourly-chart',
        viewBox: `0 0 ${width} ${TOP + PLOT + BOTTOM}`,
        role: 'img',
        'aria-label': `Attempts per hour, last 24 hours (UTC): ${summary}`,
      },
      grid,
      bars,
    ),
    h(
      'figcaption',
      {},
      h('span', { class: 'swatch ok' }),
      ' Succeeded ',
      h('span', { class: 'swatch fail' }),
      ' Did not succeed (failed, throttled or superseded) · ',
      summary,
    ),
  );
}
