// A session's start and end as calendar-ics.ts writes them (in its time zone, or in UTC), and the
// VTIMEZONEs a calendar needs for them (ics-time-zones.ts).
import { contentLine, utc } from './ics-text.ts';
import { knownZone, unambiguousLocal, utcYear, vtimezoneLines, zonedYear } from './ics-time-zones.ts';

/**
 * DTSTART and DTEND (null: none) of a session: in its time zone (TZID, local time) when it has one
 * the runtime knows, it starts within TZID_YEARS and neither local time is one that a change back
 * repeats; in UTC otherwise (RFC 5545 3.3.5), to the second. Without DTEND the event ends when it
 * starts (RFC 5545 3.6.1); DTEND must be later than DTSTART, so an end at or before the start is left out.
 */
export function startAndEnd(
  session: { startsAt: string; endsAt: string | null; timezone: string | null },
  zones: Map<string, number[]>,
): { dtstart: string; dtend: string | null } {
  const start = seconds(session.startsAt);
  const end = session.endsAt === null ? null : seconds(session.endsAt);
  const later = end !== null && end > start;
  const zone = session.timezone;
  const utcTimes = () => ({
    dtstart: `DTSTART:${utc(session.startsAt)}`,
    dtend: later ? `DTEND:${utc(session.endsAt!)}` : null,
  });
  if (zone === null || !zonedYear(start) || !knownZone(zone)) return utcTimes();
  const localStart = unambiguousLocal(zone, start);
  const localEnd = later ? unambiguousLocal(zone, end) : '';
  if (localStart === null || localEnd === null) return utcTimes();
  const years = zones.get(zone) ?? [];
  zones.set(zone, years);
  years.push(utcYear(start));
  if (later) years.push(utcYear(end));
  return {
    dtstart: `DTSTART;TZID=${zone}:${localStart}`,
    dtend: later ? `DTEND;TZID=${zone}:${localEnd}` : null,
  };
}

/** A stored timestamp's instant, to the second (iCalendar has no fractions). */
const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000) * 1000;

/** The VTIMEZONEs of a calendar: each zone its events name, for the years they fall in. */
export class TimeZones {
  private readonly years = new Map<string, Set<number>>();
  private readonly sizes = new Map<string, number>();
  private total = 0;

  /** The bytes of every VTIMEZONE with `used` (zone: years) added. */
  sizeWith(used: Map<string, number[]>): number {
    let total = this.total;
    for (const [zone, years] of used) {
      const grown = this.grown(zone, years);
      if (grown) total += this.render(zone, [...grown]).length - (this.sizes.get(zone) ?? 0);
    }
    return total;
  }

  add(used: Map<string, number[]>): void {
    for (const [zone, years] of used) {
      const grown = this.grown(zone, years);
      if (!grown) continue;
      this.years.set(zone, grown);
      const size = this.render(zone, [...grown]).length;
      this.total += size - (this.sizes.get(zone) ?? 0);
      this.sizes.set(zone, size);
    }
  }

  /** The zone's years with `years` added, or null when it has them all already. */
  private grown(zone: string, years: number[]): Set<number> | null {
    const known = this.years.get(zone);
    if (known && years.every((y) => known.has(y))) return null;
    return new Set([...(known ?? []), ...years]);
  }

  /** Every VTIMEZONE, zones in code point order. */
  text(): string {
    return [...this.years.keys()]
      .sort()
      .map((zone) => this.render(zone, [...this.years.get(zone)!]))
      .join('');
  }

  private render(zone: string, years: number[]): string {
    return vtimezoneLines(zone, years).map(contentLine).join('');
  }
}
