// The calendar of a filtered list (GET /v1/calendar.ics, http/v1/calendar.ts): the records the list
// with the same filter returns, read by the list's own statement (list-query.ts, list-sql.ts) as a
// projection, rendered as one iCalendar object (RFC 5545) with a VEVENT per session. Bounded like a
// list page: the CALENDAR_RECORDS_MAX records whose next session is soonest (the list's
// nextSessionStartsAt order: records without an upcoming session last), whole records only, at most
// CALENDAR_EVENTS_MAX events and `maxBytes` bytes. The text is a pure function of the records read
// (DTSTAMP is the record's updatedAt, as RFC 5545 3.8.7.2 has it without METHOD), so the list's
// entity tag of those records tags the calendar too.
import { contentLine, CRLF, escapeText, uriValue, utc } from './ics-text.ts';
import { startAndEnd, TimeZones } from './ics-session-times.ts';
import type { ListFilter, ListQuery, RecordField } from './list-model.ts';

/** The list parameters a calendar takes: its view of the catalog (the list's own parsing and statement). */
export const CALENDAR_PARAMETERS = ['format', 'language', 'topic', 'provider', 'country', 'city'] as const;
/** At most this many records (the ones whose next session is soonest). */
export const CALENDAR_RECORDS_MAX = 1_000;
/** At most this many events (sessions); a record whose sessions would pass it is left out, with those after it. */
export const CALENDAR_EVENTS_MAX = 10_000;
/** Changes every entity tag when the rendering changes. */
export const CALENDAR_RENDERING = 'ics-2';

const FIELDS: RecordField[] = ['title', 'summary', 'url', 'format', 'sessions'];
const PRODID = '-//Learning Opportunities Data Service//Calendar 1//EN';
const UID_DOMAIN = 'lods';

/** The list query of a calendar: its filter, the soonest sessions first, only the fields it renders. */
export const calendarQuery = (filter: ListFilter): ListQuery => ({
  filter,
  q: null,
  sort: 'nextSessionStartsAt',
  fields: FIELDS,
  facets: [],
});

type Location = { name: string | null; address: string | null; city: string | null; country: string | null };
type Session = {
  id: string;
  startsAt: string;
  endsAt: string | null;
  timezone: string | null;
  format: string | null;
  location: Location | null;
};
/** The projection the calendar reads (calendarQuery's fields, with id and updatedAt). */
export type CalendarRecord = {
  id: string;
  title: string;
  summary: string | null;
  url: string | null;
  format: string;
  updatedAt: string;
  sessions: Session[];
};

/** A rendered calendar: its text, its events, and whether a bound left records out. */
export type Calendar = { text: string; events: number; records: number; truncated: boolean };

/** Records rendered between two turns of the event loop (renderCalendarInTurns): about a millisecond. */
export const CALENDAR_SLICE_RECORDS = 50;

type RenderOptions = { name: string; maxBytes: number };

/**
 * The iCalendar text of `records` (in the list's order); `matching`: how many records the filter
 * matches (the list's totalCount), so that a calendar that left some out says so
 * (X-LODS-TRUNCATED:TRUE). `name`: X-WR-CALNAME.
 */
export function renderCalendar(records: readonly CalendarRecord[], matching: number, options: RenderOptions): Calendar {
  const slices = calendarSlices(records, matching, options);
  for (;;) {
    const step = slices.next();
    if (step.done) return step.value;
  }
}

/**
 * renderCalendar a slice of CALENDAR_SLICE_RECORDS records per turn of the event loop, for the API:
 * a 1,000-record calendar is 10 to 20 ms of the process's one thread, and other requests are read
 * and answered between its slices rather than after it (bench/README.md, "Calendars rendered in slices").
 */
export async function renderCalendarInTurns(
  records: readonly CalendarRecord[],
  matching: number,
  options: RenderOptions,
): Promise<Calendar> {
  const slices = calendarSlices(records, matching, options);
  for (;;) {
    const step = slices.next();
    if (step.done) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The calendar, yielding after every CALENDAR_SLICE_RECORDS records. */
function* calendarSlices(
  records: readonly CalendarRecord[],
  matching: number,
  options: RenderOptions,
): Generator<void, Calendar> {
  const head = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    `PRODID:${PRODID}`,
    'CALSCALE:GREGORIAN',
    `X-WR-CALNAME:${escapeText(options.name)}`,
    'REFRESH-INTERVAL;VALUE=DURATION:PT1H',
    'X-PUBLISHED-TTL:PT1H',
  ]
    .map(contentLine)
    .join('');
  const truncatedLine = contentLine('X-LODS-TRUNCATED:TRUE');
  const tail = contentLine('END:VCALENDAR');
  // The bound keeps room for the truncation line and the end.
  const budget = options.maxBytes - Buffer.byteLength(head) - truncatedLine.length - tail.length;
  const parts: string[] = [];
  const zones = new TimeZones();
  let bytes = 0;
  let events = 0;
  let included = 0;
  for (const record of records) {
    if (events + record.sessions.length > CALENDAR_EVENTS_MAX) break;
    const shared = recordLines(record);
    const used = new Map<string, number[]>();
    const text = record.sessions.map((session) => renderEvent(record, shared, session, used)).join('');
    const size = Buffer.byteLength(text);
    const zonesSize = zones.sizeWith(used);
    if (bytes + size + zonesSize > budget) break;
    zones.add(used);
    parts.push(text);
    bytes += size;
    events += record.sessions.length;
    included++;
    if (included % CALENDAR_SLICE_RECORDS === 0) yield;
  }
  const truncated = included < matching;
  const text = `${head}${truncated ? truncatedLine : ''}${zones.text()}${parts.join('')}${tail}`;
  return { text, events, records: included, truncated };
}

/** The content lines every event of a record shares, folded once per record rather than per session. */
type RecordLines = { stamp: string; described: string; modified: string };

function recordLines(record: CalendarRecord): RecordLines {
  const updated = utc(record.updatedAt);
  return {
    stamp: contentLine(`DTSTAMP:${updated}`),
    described:
      contentLine(`SUMMARY:${escapeText(record.title)}`) +
      (record.summary ? contentLine(`DESCRIPTION:${escapeText(record.summary)}`) : ''),
    modified: (record.url ? contentLine(`URL:${uriValue(record.url)}`) : '') + contentLine(`LAST-MODIFIED:${updated}`),
  };
}

/**
 * A session's VEVENT. `zones`: the years of each time zone it names are added to it (its start's and
 * its end's), for the calendar's VTIMEZONEs.
 */
function renderEvent(
  record: CalendarRecord,
  shared: RecordLines,
  session: Session,
  zones: Map<string, number[]>,
): string {
  const { dtstart, dtend } = startAndEnd(session, zones);
  const location = locationText(session, record.format);
  return (
    'BEGIN:VEVENT' +
    CRLF +
    // A session's id is unique within its record only (a copied record keeps its sessions' ids), and a
    // calendar's UIDs must be unique (RFC 5545 3.8.4.7): both ids, stable across edits.
    contentLine(`UID:${session.id}.${record.id}@${UID_DOMAIN}`) +
    shared.stamp +
    contentLine(dtstart) +
    (dtend === null ? '' : contentLine(dtend)) +
    shared.described +
    (location ? contentLine(`LOCATION:${escapeText(location)}`) : '') +
    shared.modified +
    'END:VEVENT' +
    CRLF
  );
}

/** The session's place: its location's parts that are set, else "Online" for an online session. */
function locationText(session: Session, recordFormat: string): string | null {
  const { location } = session;
  const parts = location ? [location.name, location.address, location.city, location.country] : [];
  const set = parts.filter((p): p is string => p !== null && p.trim() !== '');
  if (set.length) return set.join(', ');
  return (session.format ?? recordFormat) === 'ONLINE' ? 'Online' : null;
}
