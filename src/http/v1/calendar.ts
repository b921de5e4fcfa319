// GET /v1/calendar.ics: the sessions of the published records a filtered list returns, as an
// iCalendar subscription (text/calendar, RFC 5545; rendered by catalog/calendar-ics.ts). The filter
// is the list's own (catalog/list-parameters.ts: same values, same case rules, same statement), limited
// to the view parameters (format, language, topic, provider, country, city); any other parameter
// but `key` is a 400 naming it. The dispatcher (dispatcher.ts) has admitted the key already: a
// catalog:read key in Authorization, or a calendar:read key there or in `?key=` (routes.ts), which
// this file never reads. ETag (the list's tag of the records read), Cache-Control and 304 as the list's;
// a calendar asked for again unchanged is not rendered again (calendar-cache.ts), and one rendered
// takes turns with other requests (renderCalendarInTurns) while it keeps the key's query-class slot.
import type { ServerResponse } from 'node:http';
import { QUERY_KEY_PARAMETER } from '../../auth/bearer.ts';
import {
  CALENDAR_PARAMETERS,
  CALENDAR_RECORDS_MAX,
  CALENDAR_RENDERING,
  type CalendarRecord,
  calendarQuery,
  renderCalendarInTurns,
} from '../../catalog/calendar-ics.ts';
import type { ListFilter, ListReads } from '../../catalog/list-query.ts';
import { PAGE_MAX_BYTES_DEFAULT } from '../../catalog/read-model.ts';
import { AppError, badInput, type InvalidParam } from '../../kernel/errors.ts';
import { closedSignal } from '../closed-signal.ts';
import { heldTags, sendCacheable, tagOfVersion } from '../conditional.ts';
import { parseListParameters } from '../../catalog/list-parameters.ts';
import { parseQueryString } from '../../kernel/query-string.ts';
import type { V1Serve } from './routes.ts';
import { createCalendarCache } from './calendar-cache.ts';

export const CALENDAR_CONTENT_TYPE = 'text/calendar; charset=utf-8';
/** Set (to `true`) when a bound left matching records out of the calendar. */
export const CALENDAR_TRUNCATED_HEADER = 'X-Calendar-Truncated';
/** Longest parameter name quoted back in a problem (as query-string.ts). */
const NAME_SHOWN = 64;

type Deps = { lists: ListReads; pageMaxBytes?: number };

/** The calendar, as the dispatcher calls it. */
export function calendarEndpoint(deps: Deps): V1Serve {
  const maxBytes = deps.pageMaxBytes ?? PAGE_MAX_BYTES_DEFAULT;
  const rendered = createCalendarCache();
  return async (req, res, at) => {
    const filter = parseCalendarQuery(parseQueryString(at.query));
    // The key's query-class slot is kept until the calendar is sent: a render is the request's other
    // cost, and the slots bound it per key and per process like the read.
    let sent!: () => void;
    const holdUntil = new Promise<void>((resolve) => (sent = resolve));
    try {
      const page = await deps.lists.getPage(calendarQuery(filter), CALENDAR_RECORDS_MAX, 0, 'public', {
        keyId: at.principal!.keyId,
        signal: closedSignal(res),
        holdUntil,
      });
      // The list's tag changes with any byte of the records read, their order and the total: all the
      // calendar is made of (with the rendering's version).
      const etag = tagOfVersion(`${CALENDAR_RENDERING}:${page.etag}`);
      const held = heldTags(req.headers['if-none-match']);
      if (held === '*' || held?.includes(etag)) return sendCacheable(res, etag, null);
      const name = calendarName(filter);
      const calendar = await rendered.get(`${etag}|${name}`, () =>
        renderCalendarInTurns(JSON.parse(`[${page.results}]`) as CalendarRecord[], page.totalCount, {
          name,
          maxBytes,
        }),
      );
      sendCalendar(res, etag, calendar.text, calendar.truncated);
    } finally {
      sent();
    }
  };
}

/** The view parameters as the list reads them; a 400 names every other parameter (but `key`) and every bad value. */
export function parseCalendarQuery(raw: Record<string, unknown>): ListFilter {
  const allowed: readonly string[] = CALENDAR_PARAMETERS;
  const problems: InvalidParam[] = Object.keys(raw)
    .filter((name) => name !== QUERY_KEY_PARAMETER && !allowed.includes(name))
    .map((name) => ({
      name: name.slice(0, NAME_SHOWN),
      reason: `is not a calendar parameter (${CALENDAR_PARAMETERS.join(', ')})`,
    }));
  const view = Object.fromEntries(Object.entries(raw).filter(([name]) => allowed.includes(name)));
  let filter: ListFilter = {};
  try {
    filter = parseListParameters(view).filter;
  } catch (error) {
    if (!(error instanceof AppError && error.invalidParams)) throw error;
    problems.push(...error.invalidParams);
  }
  if (problems.length) throw badInput(problems);
  return filter;
}

/** X-WR-CALNAME: what the calendar shows, e.g. "Learning opportunities (format=ONLINE; city=Berlin)". */
function calendarName(filter: ListFilter): string {
  const parts = CALENDAR_PARAMETERS.filter((name) => filter[name]).map((name) => `${name}=${filter[name]!.join(',')}`);
  return parts.length ? `Learning opportunities (${parts.join('; ')})` : 'Learning opportunities';
}

/** 200 with the calendar: ETag and Cache-Control as every /v1 read (conditional.ts), the calendar's type. */
function sendCalendar(res: ServerResponse, etag: string, text: string, truncated: boolean): void {
  res.setHeader('ETag', `"${etag}"`);
  res.setHeader('Cache-Control', 'private, no-cache');
  res.setHeader('Content-Type', CALENDAR_CONTENT_TYPE);
  if (truncated) res.setHeader(CALENDAR_TRUNCATED_HEADER, 'true');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.writeHead(200);
  res.end(text);
}
