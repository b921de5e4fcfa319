// View facets compared as sets: SQL keeps the order and repeats it finds (list_entry's arrays, a
// doc's own order), viewFacets sorts; a view only asks whether a value is among them.
import { type ViewFacets, viewFacets } from '../../src/views/view.ts';

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const set = (values: string[]) => [...new Set(values)].sort(byCodeUnits);

export const normalized = (f: ViewFacets | null): ViewFacets | null =>
  f && { ...f, topics: set(f.topics), countries: set(f.countries), cities: set(f.cities) };

/** A record's (or event data's) facets by viewFacets, as a set. */
export const facetsOf = (record: unknown): ViewFacets | null => normalized(viewFacets(record));
