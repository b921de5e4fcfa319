// What a plugin works out from a request's document alone (its compiled form, whether it passes a
// set of validation rules), kept per distinct document: Apollo hands the same query text the same
// hash, and internal clients send a handful of documents, each thousands of times. Bounded: past
// `max` distinct keys the oldest is dropped first, so no caller can grow it.

/** A get-or-compute of values keyed by a document's hash (and operation name, where it matters). */
export type DocumentCache<T> = (key: string, compute: () => T) => T;

export function documentCache<T>(max: number): DocumentCache<T> {
  const kept = new Map<string, T>();
  return (key, compute) => {
    if (kept.has(key)) return kept.get(key)!;
    const value = compute();
    if (kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(key, value);
    return value;
  };
}

/** Distinct documents kept per cache. */
export const DOCUMENTS_KEPT = 200;
