// The calendars rendered last, kept by what fixes their bytes (the records' tag and the calendar's
// name), so that a calendar asked for again unchanged is not rendered again. Rendering is the
// calendar's cost, on the process's one thread: 1,000 records of 4,373 sessions took 250-750 ms of
// CPU a time, and one key fetching the same calendar in a loop tripled other keys' p99 (found from
// outside); calendar clients poll the same addresses over and over, and most come back unchanged.
// Least recently used first out, within MAX_BYTES; a calendar over a quarter of that is not kept.
// Rendering takes turns of the event loop (http/v1/calendar.ts): a request for a calendar being
// rendered waits for that rendering instead of starting another. How many render at once is bounded
// by the query class's slots, which a calendar keeps through its rendering (calendar.ts).
import { calendarRenders } from '../../kernel/metrics.ts';

const MAX_BYTES = 32 * 1024 * 1024;

export type RenderedCalendar = { text: string; truncated: boolean };

export function createCalendarCache(maxBytes = MAX_BYTES) {
  const kept = new Map<string, RenderedCalendar>();
  const rendering = new Map<string, Promise<RenderedCalendar>>();
  let bytes = 0;
  const size = (c: RenderedCalendar) => c.text.length * 2;
  return {
    /** The calendar of `key`, rendered now by `render` unless kept. */
    async get(key: string, render: () => Promise<RenderedCalendar>): Promise<RenderedCalendar> {
      const found = kept.get(key);
      if (found) {
        kept.delete(key); // most recently used last
        kept.set(key, found);
        calendarRenders.inc({ cached: 'true' });
        return found;
      }
      const under = rendering.get(key);
      if (under) {
        calendarRenders.inc({ cached: 'true' });
        return under;
      }
      const started = render().finally(() => rendering.delete(key));
      rendering.set(key, started);
      const calendar = await started;
      calendarRenders.inc({ cached: 'false' });
      if (size(calendar) <= maxBytes / 4) {
        kept.set(key, calendar);
        bytes += size(calendar);
        for (const [oldest, c] of kept) {
          if (bytes <= maxBytes) break;
          kept.delete(oldest);
          bytes -= size(c);
        }
      }
      return calendar;
    },
  };
}
