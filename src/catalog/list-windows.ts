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

// A country with a start window (at most 1,000 keys: countries times days), read from list_entry's
// GIN of each record's countries times its start days (migration place_days), instead of
// intersecting the countries' and the start days' GINs (37,372 and 122,359 entries for `de` and a
// 30-day window at a million records, for 4,708 rows). The keys say "one of the countries, and a
// start on one of the window's days"; the window's bounds within its end days are checked on
// `starts`. Null: the two GINs.
function placeDays(filter: ListFilter, param: Param, e: string): string | null {
  const { country, startsFrom, startsBefore } = filter;
  if (!country || !startsFrom || !startsBefore) return null;
  const days = (startsBefore.getTime() - startsFrom.getTime()) / 86_400_000;
  if (country.length * (days + 2) > 1000) return null;
  const first = utcDay(param(startsFrom, 'timestamptz'));
  const last = utcDay(lastBefore(param(startsBefore, 'timestamptz')));
  return `place_days(${e}.countries, ${e}.start_days) && (select array_agg(lower(c) || '|' || d)
            from unnest(${param(country, 'text[]')}) c, generate_series(${first}, ${last}) d)`;
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
  } else if (filter.startsFrom || filter.startsBefore) {
    const statuses = sessionStatus ?? `s.status = any(${param(STATUSES, 'text[]')})`;
    conditions.push(
      `${e}.id in (select s.id from list_session s where ${statuses} and ${firstInWindow(filter, param, 's')})`,
    );
  }
  return conditions;
}
