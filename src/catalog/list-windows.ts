// The country and session start window conditions of a filtered list (list-sql.ts), on list_entry's
// row `e`: which index reads a window, the start days' GIN, the countries times days GIN, or
// list_session's index.
import { firstInWindow } from './list-counts.ts';
import { givenFilters, type ListFilter, type ListQuery } from './list-model.ts';
import { STATUSES } from './record-schema.ts';

type Param = (value: unknown, type: string) => string;

// A timestamp's UTC day (days since 1970), as list_entry's start_days hold them; and the last instant
// before a window's end (`startsBefore` excluded: its day is the window's last only if a start can
// fall on it).
const utcDay = (at: string) => `floor(extract(epoch from ${at}) / 86400)::int`;
const lastBefore = (before: string) => `${before} - interval '1 millisecond'`;

// A session start window closed on both sides and at most START_DAYS_MAX days long is read from
// list_entry's GIN on start_days, its UTC days as keys (the exact bounds checked on `starts`),
// intersected with the other conditions' indexes before any row is read. Any other window (longer,
// open on a side, or alone) is read from list_session's index, each record's first session in it
// (firstInWindow, as a window alone is counted). The GIN costs its keys times the records with a
// start in the window, whatever the other conditions; the sessions cost their number in the window.
// Measured at a million records (bench/README.md, "Start windows: the start days' GIN or the
// sessions"): the GIN wins up to about a month beside a narrow condition (`topic=python`, 2 days: 10
// against 100 ms; `city=Berlin`, 30 days: 77 against 163) and loses beyond (60 days with
// `language=de`: 265 against 128 ms; a year with one provider: 1.9 s against 24 ms; 90 days with a
// search: 1.5 s against 0.4 s).
const START_DAYS_MAX = 45;
// A window with these alone is the only condition.
const WINDOW_ONLY = new Set<keyof ListFilter>(['startsFrom', 'startsBefore', 'status']);

/** Whether `filter`'s start window is read from start_days' GIN (above): closed, at most START_DAYS_MAX days, and not alone. */
function windowFromDays({ q, filter }: ListQuery): boolean {
  const { startsFrom, startsBefore } = filter;
  if (!startsFrom || !startsBefore || startsBefore.getTime() - startsFrom.getTime() > START_DAYS_MAX * 86_400_000)
    return false;
  return q !== null || givenFilters(filter).some((name) => !WINDOW_ONLY.has(name));
}

// The UTC days of a closed start window, for list_entry's GIN on start_days.
function startDays(startsFrom: Date, startsBefore: Date, param: Param): string {
  const first = utcDay(param(startsFrom, 'timestamptz'));
  const last = utcDay(lastBefore(param(startsBefore, 'timestamptz')));
  return `(select array_agg(d) from generate_series(${first}, ${last}) d)`;
}

/** Whether `filter` asks for a country with a closed start window of at most 1,000 keys (placeDays). */
function placeDaysFit({ country, startsFrom, startsBefore }: ListFilter): boolean {
  if (!country || !startsFrom || !startsBefore) return false;
  return country.length * ((startsBefore.getTime() - startsFrom.getTime()) / 86_400_000 + 2) <= 1000;
}

// A country with a start window (at most 1,000 keys: countries times days), read from list_entry's
// GIN of each record's countries times its start days (migration place_days), instead of
// intersecting the countries' and the start days' GINs (37,372 and 122,359 entries for `de` and a
// 30-day window at a million records, for 4,708 rows). The keys say "one of the countries, and a
// start on one of the window's days"; the window's bounds within its end days are checked on
// `starts`. Null: the two GINs.
function placeDays(filter: ListFilter, param: Param, e: string): string | null {
  const { country, startsFrom, startsBefore } = filter;
  if (!placeDaysFit(filter) || !country || !startsFrom || !startsBefore) return null;
  const first = utcDay(param(startsFrom, 'timestamptz'));
  const last = utcDay(lastBefore(param(startsBefore, 'timestamptz')));
  return `place_days(${e}.countries, ${e}.start_days) && (select array_agg(lower(c) || '|' || d)
            from unnest(${param(country, 'text[]')}) c, generate_series(${first}, ${last}) d)`;
}

/**
 * Whether `query`'s start window is read from list_entry's last start (`starts[cardinality(starts)]
 * >= startsFrom`, the end of the ascending starts: a record has a session at or after a time exactly
 * when its last session does): a window open at its end, no search, and a filter beside it but the
 * status. The condition is then checked on the rows the other filters find, and a format's or a
 * language's btree holds it (migration
 * last_starts): their matches are one range of an index, counted and, in session order, paged
 * without a row. The sessions' index found them instead from every session after `startsFrom`
 * (520,000 at a million records for a window from six months ahead), hashed against the other
 * filters' rows: `language=de` 0.9-1.1 s against 10 ms, `topic=python` 0.7-1.0 s against 0.15 s,
 * one provider 45-100 ms against 7-9 ms (a slow machine: bench/README.md, "Open start windows from the last
 * start"). A window alone keeps the sessions (its count is one range of their index), and so does a
 * search (its matches are the catalog's rows, not list_entry's).
 */
export function lastStartFrom({ q, filter }: ListQuery): boolean {
  if (q !== null || !filter.startsFrom || filter.startsBefore) return false;
  return givenFilters(filter).some((name) => !WINDOW_ONLY.has(name));
}

/**
 * The conditions on list_entry `e` of `query`'s countries and start window; `sessionStatus`, the
 * status condition on list_session rows `s` (null: any status).
 */
export function placeAndWindow(query: ListQuery, param: Param, e: string, sessionStatus: string | null): string[] {
  const { filter } = query;
  const conditions: string[] = [];
  const placed = placeDays(filter, param, e);
  if (filter.country && !placed)
    conditions.push(`lower_each(${e}.countries) && lower_each(${param(filter.country, 'text[]')})`);
  if (placed || windowFromDays(query)) {
    const from = param(filter.startsFrom, 'timestamptz');
    const before = param(filter.startsBefore, 'timestamptz');
    conditions.push(
      `${placed ?? `${e}.start_days && ${startDays(filter.startsFrom!, filter.startsBefore!, param)}`} and exists (select from unnest(${e}.starts) t where t >= ${from} and t < ${before})`,
    );
  } else if (lastStartFrom(query)) {
    conditions.push(`${e}.starts[cardinality(${e}.starts)] >= ${param(filter.startsFrom, 'timestamptz')}`);
  } else if (filter.startsFrom || filter.startsBefore) {
    const statuses = sessionStatus ?? `s.status = any(${param(STATUSES, 'text[]')})`;
    conditions.push(
      `${e}.id in (select s.id from list_session s where ${statuses} and ${firstInWindow(filter, param, 's')})`,
    );
  }
  return conditions;
}

/**
 * The most sessions on either side of a window (and records without a session) for which its long
 * form is used (outsideWindow): that form's work grows with them, the sessions' with those inside.
 */
export const OUTSIDE_MAX = 5000;

// How far on either side of the request's time a window must reach for outsideWindow (below).
const AROUND_NOW_MS = 183 * 86_400_000;

/**
 * Whether `query` has a start window that outsideWindow may serve: one that holds the year around
 * now (six months on either side, an open side reaching forever), where a catalog's sessions
 * gather, and not read from the start days (placeAndWindow); no search. Asking costs the statement
 * its second form (about 4 ms of planning at a million records) and the probe (up to 3 ms when it
 * finds many sessions outside): a shorter window would pay it for nothing.
 */
export function longWindow(query: ListQuery, now = Date.now()): boolean {
  const { q, filter } = query;
  if (q !== null || (!filter.startsFrom && !filter.startsBefore)) return false;
  if ((filter.startsFrom?.getTime() ?? -Infinity) > now - AROUND_NOW_MS) return false;
  if ((filter.startsBefore?.getTime() ?? Infinity) < now + AROUND_NOW_MS) return false;
  return !placeDaysFit(filter) && !windowFromDays(query);
}

/**
 * A long session start window, found from the records it does not match (`records`: their ids, a
 * select) when they are few (`few`, a condition holding no column: at most `max` sessions before the
 * window, after it, and records without a session). The complement of a window's matches is the
 * records without a session, those whose every session is before the window (their first session
 * is before it, and so is their last, the end of list_entry's ascending `starts`), and those whose
 * first session at or after the window's end has its previous start before the window or none
 * (every session after the window, or a gap holding the whole window). `startsFrom` five years ago
 * and `startsBefore` in five match nearly every record: the sessions inside (1,000,000 at a million
 * records, 123 ms to count) are read to find the matches, where the few outside are read here.
 * For a query with a longWindow. `sessionStatus` and `entryStatus`: the status conditions on
 * list_session `s` and list_entry `e` (null: any status).
 */
export function outsideWindow(
  query: ListQuery,
  param: Param,
  sessionStatus: string | null,
  entryStatus: string | null,
  max: number,
): { few: string; records: string } {
  const { filter } = query;
  const statuses = sessionStatus ?? `s.status = any(${param(STATUSES, 'text[]')})`;
  const from = filter.startsFrom ? param(filter.startsFrom, 'timestamptz') : null;
  const before = filter.startsBefore ? param(filter.startsBefore, 'timestamptz') : null;
  const limit = param(max, 'int');
  const atMost = (rows: string) => `(select count(*) from (${rows} limit ${limit}) x) < ${limit}`;
  const sessionless = `select e.id from list_entry e where cardinality(e.starts) = 0${entryStatus ? ` and ${entryStatus}` : ''}`;
  const few = [
    from && atMost(`select from list_session s where ${statuses} and s.starts_at < ${from}`),
    before && atMost(`select from list_session s where ${statuses} and s.starts_at >= ${before}`),
    atMost(sessionless),
  ];
  const records = [
    before &&
      `select s.id from list_session s where ${statuses} and s.starts_at >= ${before}
          and ${from ? `(s.prev_starts_at is null or s.prev_starts_at < ${from})` : 's.prev_starts_at is null'}`,
    from &&
      `select s.id from list_session s
        where ${statuses} and s.starts_at < ${from} and s.prev_starts_at is null
          and (select e.starts[cardinality(e.starts)] from list_entry e where e.id = s.id) < ${from}`,
    sessionless,
  ];
  return { few: few.filter(Boolean).join(' and '), records: records.filter(Boolean).join(' union all ') };
}
