// The fixed query set of `npm run bench:query` (docs/contract.md, "Filters"), shared with the EXPLAIN test
// (test/v1/list-query-plans.test.ts): each parameter alone, three combinations, q alone (common words
// and rare ones) and with a filter, a facets request, long and open start windows with a filter, and
// the unfiltered list as the reference.
// Values are common ones of the seed generator (src/catalog/generate.ts), relative to the seed's `now`.
const DAY = 86_400_000;

export type BenchQuery = { name: string; query: string };

export function benchQueries(now: Date): BenchQuery[] {
  const at = (days: number) => new Date(now.getTime() + days * DAY).toISOString();
  return [
    { name: 'unfiltered (reference)', query: '' },
    { name: 'updatedSince', query: `updatedSince=${at(-30)}` },
    { name: 'updatedBefore', query: `updatedBefore=${at(-300)}` },
    { name: 'format', query: 'format=HYBRID' },
    { name: 'language', query: 'language=de' },
    { name: 'topic', query: 'topic=python' },
    { name: 'provider', query: 'provider=Harbor%20College' },
    { name: 'country', query: 'country=DE' },
    { name: 'city', query: 'city=Berlin' },
    { name: 'startsFrom+startsBefore', query: `startsFrom=${at(30)}&startsBefore=${at(37)}` },
    { name: 'sort=updatedAt', query: 'sort=updatedAt' },
    { name: 'sort=nextSessionStartsAt', query: 'sort=nextSessionStartsAt' },
    { name: 'fields', query: 'fields=title,provider,sessions' },
    { name: 'format+language', query: 'format=ONLINE&language=de,fr' },
    {
      name: 'country+starts+sort',
      query: `country=DE&startsFrom=${at(30)}&startsBefore=${at(60)}&sort=nextSessionStartsAt`,
    },
    { name: 'topic+format+updatedSince', query: `topic=python,ai&format=IN_PERSON&updatedSince=${at(-90)}` },
    { name: 'q', query: 'q=machine%20learn' },
    { name: 'q, rare words', query: 'q=orchard%20academy' },
    { name: 'topic+country', query: 'topic=python&country=de' },
    { name: 'q+format', query: 'q=machine%20learn&format=ONLINE' },
    { name: 'q+format, relevance', query: 'q=cybersecurity&format=ONLINE&sort=relevance' },
    { name: 'q+format, session order', query: 'q=machine%20learn&format=ONLINE&sort=nextSessionStartsAt' },
    { name: 'facets', query: 'facets=format,language,topic,provider,country&country=DE' },
    // A word no record holds, with facets: the page from the (no) matches, not a walk of the catalog's order.
    { name: 'q+facets, no match', query: 'q=course&facets=format,language,topic,provider,country' },
    // Long and open session start windows (the sessions' index, or the start days' beside another index).
    { name: 'starts, ten years', query: `startsFrom=${at(-1826)}&startsBefore=${at(1826)}` },
    { name: 'format+starts, ten years', query: `format=ONLINE&startsFrom=${at(-1826)}&startsBefore=${at(1826)}` },
    { name: 'language+startsFrom', query: `language=de&startsFrom=${at(180)}&sort=nextSessionStartsAt` },
    // Session order beside a counted filter, and beside facets: the bounded walk of the sessions, or the matches.
    { name: 'language, session order', query: 'language=de&sort=nextSessionStartsAt' },
    { name: 'language+facets, session order', query: 'language=de&facets=format&sort=nextSessionStartsAt' },
  ];
}
