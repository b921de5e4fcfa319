// The filtered lists' query model (docs/contract.md, "Filters"): the parameters a list may take, as REST
// (catalog/list-parameters.ts) and GraphQL (graphql/list-arguments.ts) parse them into one ListQuery,
// and the page it answers. The statement is built in list-sql.ts, run and rendered in list-query.ts.
import { RecordSchema } from './record-schema.ts';

export const LIST_SORTS = ['-updatedAt', 'updatedAt', 'nextSessionStartsAt', 'relevance'] as const;
export const LIST_FACETS = ['format', 'language', 'topic', 'provider', 'country'] as const;
/** The record's top-level fields, in the order they are rendered (and projected). */
export const RECORD_FIELDS = Object.keys(RecordSchema.shape) as (keyof typeof RecordSchema.shape)[];
/** At most this many values in one comma-separated parameter (or GraphQL list). */
export const LIST_VALUES_MAX = 50;
/** Values per facet, most frequent first. */
export const FACET_TOP = 20;

export type ListSort = (typeof LIST_SORTS)[number];
export type ListFacet = (typeof LIST_FACETS)[number];
export type RecordField = (typeof RECORD_FIELDS)[number];

/** Every condition is optional; different conditions combine with AND, the values of one with OR. */
export type ListFilter = {
  updatedSince?: Date;
  updatedBefore?: Date;
  format?: string[];
  /** BCP 47 tags, canonical (canonicalLanguages): the parsers write them so. */
  language?: string[];
  topic?: string[];
  provider?: string[];
  /** Any session's country: free text, compared in lower case (list-sql.ts). */
  country?: string[];
  /** Any session's city: free text, compared in lower case (list-sql.ts). */
  city?: string[];
  startsFrom?: Date;
  startsBefore?: Date;
  /** Internal readers only (GraphQL); the public list is PUBLISHED only. */
  status?: string[];
};

/** The parameters `filter` gives (those not undefined), in the type's order. */
export const givenFilters = (filter: ListFilter): (keyof ListFilter)[] =>
  (Object.keys(filter) as (keyof ListFilter)[]).filter((name) => filter[name] !== undefined);

export type ListQuery = {
  filter: ListFilter;
  /** The search text, or null. */
  q: string | null;
  sort: ListSort;
  /** Fields to return (id and updatedAt are added), or null for whole records. */
  fields: RecordField[] | null;
  facets: ListFacet[];
};

export type FacetCounts = Partial<Record<ListFacet, { value: string; count: number }[]>>;
/** `count`: the records in `results` (fewer than `limit` when the page's byte bound stopped it early). */
export type ListPage = {
  totalCount: number;
  limit: number;
  offset: number;
  count: number;
  results: string;
  facets: FacetCounts | null;
  etag: string;
};

/** True when the query is the plain list (the unfiltered fast path answers it). */
export const isPlainList = (query: ListQuery): boolean =>
  Object.values(query.filter).every((v) => v === undefined) &&
  query.q === null &&
  query.sort === '-updatedAt' &&
  query.fields === null &&
  query.facets.length === 0;

/**
 * The values of a `language` filter in the form the catalog stores languages in (catalog/input.ts):
 * BCP 47 tags, canonical as Intl.getCanonicalLocales writes them (`de`, `pt-BR`, `zh-Hant-TW`). Tags
 * ignore case, so `DE` and `PT-br` are `de` and `pt-BR`, and find what those find (the index and
 * maintained counts of the stored value serve them). A value that is no tag (`de_DE`) is kept as
 * given: no stored language is spelled so, it matches nothing, as before. Distinct, in order.
 */
export function canonicalLanguages(values: readonly string[]): string[] {
  return [
    ...new Set(
      values.map((value) => {
        try {
          return Intl.getCanonicalLocales(value)[0] ?? value;
        } catch {
          return value;
        }
      }),
    ),
  ];
}

const WORD = /[\p{L}\p{N}]/u;
const WORDS = /[\p{L}\p{N}]+/gu;

/** The tsquery texts of a search's words: all but the last quoted and joined with AND, the last as a prefix. */
export type SearchWords = { words: string; last: string };

/**
 * The tsquery texts of a search: `words`, every word (letters and digits) quoted and joined with AND
 * but the last, and `last`, the last word as a prefix ("machine learn" finds "Machine Learning").
 * to_tsquery stems each word with the 'english' configuration and drops stop words; the last word
 * is kept even when it is one ("a" and "the" are the start of many words: "q=the" finds "Theory"),
 * see list-sql.ts. Null when the text holds no word.
 * The words are read in their NFKC form: full-width letters (ａｎａｌｙｔｉｃｓ) and ligatures (ﬁ)
 * are the letters most of the catalog's text is written in. A record written in them is indexed as
 * written, so when the text as sent differs, `sent` is the search of its own words too, matched
 * as a whole beside the NFKC one (a word's two forms in one tsquery made a full-width stop word
 * required: "ｄａｔａ ａｎｄ" found nothing).
 */
export function searchQuery(text: string): (SearchWords & { sent: SearchWords | null; count: number }) | null {
  // Whether it holds a word is read from the text as sent (the OpenAPI pattern of q says the same).
  if (!WORD.test(text)) return null;
  const sent = text.toLowerCase().match(WORDS)!;
  const compatible = text.normalize('NFKC').toLowerCase().match(WORDS) ?? sent;
  const differs = sent.length !== compatible.length || sent.some((word, i) => word !== compatible[i]);
  return { ...tsqueryTexts(compatible), sent: differs ? tsqueryTexts(sent) : null, count: compatible.length };
}

/** The longest search text (`q`, GraphQL `search`), in characters as sent. */
export const SEARCH_TEXT_MAX = 500;
/**
 * The most words of a search, in its NFKC form: one character can be several words there (U+FDFA is
 * four), and 500 of them searched 2,000 words, twice the time of the costliest search the docs show.
 */
export const SEARCH_WORDS_MAX = 64;

/** Why a search text is refused (as the parameter's reason), or null when it is a search. */
export function searchTextProblem(text: string): string | null {
  const search = text.length > SEARCH_TEXT_MAX ? null : searchQuery(text);
  return search && search.count <= SEARCH_WORDS_MAX
    ? null
    : `must hold at least one word (letters or digits), at most ${SEARCH_TEXT_MAX} characters and ${SEARCH_WORDS_MAX} words`;
}

function tsqueryTexts(words: string[]): SearchWords {
  const quoted = words.map((w) => `'${w}'`);
  return { words: quoted.slice(0, -1).join(' & '), last: `${quoted.at(-1)!}:*` };
}
