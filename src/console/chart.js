// The success rate of a receiver's attempts per hour over the last 24 h, as a small inline SVG bar
// chart: one bar per hour (height = share of attempts that succeeded), a flat grey mark for an hour
// without attempts. Colours come from console.css classes (no inline style: CSP).
import { svg } from './dom.js';

const BAR = 6;
const HEIGHT = 28;

export function successChart(hours) {
  const attempts = hours.reduce((n, h) => n + h.attempts, 0);
  const successes = hours.reduce((n, h) => n + h.successes, 0);
  const summary =
    attempts === 0
      ? 'no attempts in the last 24 h'
      : `${successes} of ${attempts} attempts succeeded in the last 24 h (${Math.round((100 * successes) / attempts)} %)`;
  const bars = hours.map((h, i) => {
    const rate = h.attempts === 0 ? null : h.successes / h.attempts;
    const height = rate === null ? 2 : Math.max(2, Math.round(rate * (HEIGHT - 2)));
    const kind = rate === null ? 'none' : rate === 1 ? 'ok' : rate === 0 ? 'fail' : 'partial';
    const label = `${h.hour.slice(0, 13)}:00 UTC: ${h.attempts === 0 ? 'no attempts' : `${h.successes}/${h.attempts} succeeded`}`;
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
  const attempts = hours.reduce((n, h) => n + h.attempts, 0);
  const successes = hours.reduce((n, h) => n + h.successes, 0);
  return attempts === 0 ? 'no attempts' : `${Math.round((100 * successes) / attempts)} % of ${attempts}`;
}
