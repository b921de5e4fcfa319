// Time zones for the calendar (calendar-ics.ts): a session with a time zone has its start and end as
// that zone's local time (DTSTART;TZID=Europe/Berlin:20270328T100000), so a calendar app shows it in
// the session's zone, and the calendar carries a VTIMEZONE for each zone it names (RFC 5545 3.6.5:
// required for every TZID used). The zone's offsets come from the runtime's own tz database (Intl),
// read once per zone and year: the instants where the offset changes, found week by week and then to
// the second (two changes within one week, which no zone has had in decades, would be missed). A
// VTIMEZONE lists, for each year that has events, the offset at the year's start and every change
// in it, each an observance of its own (DTSTART, TZOFFSETFROM, TZOFFSETTO; no recurrence rule to
// interpret): exact for those years, whatever the zone's history. Sessions outside TZID_YEARS stay in
// UTC, which bounds what a calendar can make this read (a zone's year is read once: about 70 Intl calls).

const WEEK_MS = 7 * 86_400_000;

type Change = { at: number; from: number; to: number };
/** A zone's year: the offset (seconds east of UTC) at its start, and its changes in order. */
type ZoneYear = { start: number; changes: Change[] };

const formatters = new Map<string, Intl.DateTimeFormat>();
/** zone -> year -> its offsets (each read once: a calendar asks for them per event). */
const zones = new Map<string, Map<number, ZoneYear>>();
let cachedYears = 0;

/** The offset of `zone` at instant `t` (ms), in seconds east of UTC, read from Intl. */
function intlOffset(zone: string, t: number): number {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formatters.set(zone, formatter);
  }
  const name = formatter.formatToParts(t).find((p) => p.type === 'timeZoneName')!.value;
  const m = /^GMT(?:([+-])(\d\d):(\d\d)(?::(\d\d))?)?$/.exec(name);
  if (!m?.[1]) return 0;
  const seconds = Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0);
  return m[1] === '-' ? -seconds : seconds;
}

/** The start of `year` in UTC (ms). */
const yearStart = (year: number) => Date.UTC(year, 0, 1);

function zoneYear(zone: string, year: number): ZoneYear {
  let ofZone = zones.get(zone);
  let cached = ofZone?.get(year);
  if (cached) return cached;
  const from = yearStart(year);
  const to = yearStart(year + 1);
  const start = intlOffset(zone, from);
  const changes: Change[] = [];
  let before = start;
  for (let day = from; day < to; day += WEEK_MS) {
    const next = Math.min(day + WEEK_MS, to);
    const after = intlOffset(zone, next);
    if (after === before) continue;
    // The change lies in (day, next]: to the second.
    let low = day;
    let high = next;
    while (high - low > 1000) {
      const mid = low + Math.floor((high - low) / 2000) * 1000;
      if (intlOffset(zone, mid) === before) low = mid;
      else high = mid;
    }
    changes.push({ at: high, from: before, to: after });
    before = after;
  }
  cached = { start, changes };
  if (++cachedYears > 10_000) {
    zones.clear();
    cachedYears = 1;
  }
  ofZone = zones.get(zone) ?? new Map<number, ZoneYear>();
  zones.set(zone, ofZone);
  ofZone.set(year, cached);
  return cached;
}

/** The offset of `zone` at instant `t` (ms), in seconds east of UTC. */
export function offsetAt(zone: string, t: number): number {
  const { start, changes } = zoneYear(zone, utcYear(t));
  let offset = start;
  for (const change of changes) {
    if (change.at > t) break;
    offset = change.to;
  }
  return offset;
}

/**
 * Instant `t` (ms) as `zone`'s local time (localDateTime), or null when that local time occurs twice
 * (the hour a change back repeats): RFC 5545 3.3.5 reads such a time as its first occurrence, some
 * parsers as its second (ical.js), so neither occurrence can be written in local time unread.
 */
export function unambiguousLocal(zone: string, t: number): string | null {
  // A year's changes: none is within hours of a new year in any zone, so the hour a change repeats
  // lies in the change's own year.
  const { start, changes } = zoneYear(zone, utcYear(t));
  let offset = start;
  for (const change of changes) {
    const repeated = (change.from - change.to) * 1000;
    if (repeated > 0 && t >= change.at - repeated && t < change.at + repeated) return null;
    if (change.at <= t) offset = change.to;
  }
  return localDateTime(t, offset);
}

/** Whether the runtime knows `zone` (a zone the tz database dropped since it was stored: the event stays in UTC). */
export function knownZone(zone: string): boolean {
  let known = knownZones.get(zone);
  if (known === undefined) {
    try {
      intlOffset(zone, 0);
      known = true;
    } catch {
      known = false;
    }
    if (knownZones.size > 10_000) knownZones.clear();
    knownZones.set(zone, known);
  }
  return known;
}
const knownZones = new Map<string, boolean>();

/** A DATE-TIME without zone (RFC 5545 3.3.5, form #1 or #3's value): instant `t` (ms, whole seconds) shifted by `offset` seconds. */
export function localDateTime(t: number, offset: number): string {
  const secs = Math.floor(t / 1000) + offset;
  const days = Math.floor(secs / 86_400);
  const inDay = secs - days * 86_400;
  const { year, month, day } = civilDate(days);
  const hh = Math.floor(inDay / 3600);
  const mm = Math.floor((inDay % 3600) / 60);
  const ss = inDay % 60;
  return `${String(year).padStart(4, '0')}${two(month)}${two(day)}T${two(hh)}${two(mm)}${two(ss)}`;
}

const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** The year of instant `t` (ms) in UTC, without a Date (called for every event). */
export const utcYear = (t: number): number => civilDate(Math.floor(t / 86_400_000)).year;

/** The proleptic Gregorian date of day `days` since 1970-01-01 (H. Hinnant's civil_from_days). */
function civilDate(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** A UTC-OFFSET value (RFC 5545 3.3.14): +0100, -0430, +004430 (seconds only when there are some). */
function utcOffset(seconds: number): string {
  const sign = seconds < 0 ? '-' : '+';
  const s = Math.abs(seconds);
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = s % 60 ? String(s % 60).padStart(2, '0') : '';
  return `${sign}${hh}${mm}${ss}`;
}

/** The years in which a session's time zone is named (TZID); before and after them it stays in UTC. */
export const TZID_YEARS = { from: 1990, to: 2100 };

/** Whether a session starting at `t` (ms) is given in its time zone (a year within TZID_YEARS). */
export function zonedYear(t: number): boolean {
  const year = utcYear(t);
  return year >= TZID_YEARS.from && year <= TZID_YEARS.to;
}

/**
 * The content lines (unfolded, without line ends) of the VTIMEZONE of `zone` for `eventYears`: for
 * each year, the offset at its start and every change in it. An observance is DAYLIGHT when its offset
 * is above the lower of its year's January and July offsets, STANDARD otherwise.
 */
export function vtimezoneLines(zone: string, eventYears: Iterable<number>): string[] {
  const lines = ['BEGIN:VTIMEZONE', `TZID:${zone}`];
  for (const year of [...new Set(eventYears)].sort((a, b) => a - b)) {
    const { start, changes } = zoneYear(zone, year);
    const standard = Math.min(start, offsetAt(zone, Date.UTC(year, 6, 1)));
    const observance = (at: number, from: number, to: number) => {
      const kind = to > standard ? 'DAYLIGHT' : 'STANDARD';
      lines.push(
        `BEGIN:${kind}`,
        `DTSTART:${localDateTime(at, from)}`,
        `TZOFFSETFROM:${utcOffset(from)}`,
        `TZOFFSETTO:${utcOffset(to)}`,
        `END:${kind}`,
      );
    };
    observance(yearStart(year), start, start);
    for (const change of changes) observance(change.at, change.from, change.to);
  }
  lines.push('END:VTIMEZONE');
  return lines;
}
