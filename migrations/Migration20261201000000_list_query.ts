import { Migration } from '@mikro-orm/migrations';

// Filters, full-text search and sorts of the list (docs/contract.md, "Filters"; src/catalog/list-query.ts).
// - `search`: a stored generated column, so PostgreSQL computes it in the same statement that
//   writes the columns it reads (write-docs.ts, whatever writes): the vector can never disagree with
//   the doc. Weights: title A, summary B, provider name and topics C, description D; English stemming.
// - an index for each filter, shaped like its query: equality filters lead with status and the value
//   and end with the list order, so a page of one value is read in order; topics by GIN (?|);
//   sessions by country, city and start, each ending with the record's id (index-only semi-joins).
// Adding the column rewrites the table once (about a second per 100,000 records here).
export class Migration20261201000000_list_query extends Migration {
  override up(): void {
    this.addSql(`
      alter table learning_opportunity add column search tsvector generated always as (
        setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') ||
        setweight(to_tsvector('english'::regconfig, coalesce(summary, '')), 'B') ||
        setweight(to_tsvector('english'::regconfig, coalesce(provider_name, '')) || to_tsvector('english'::regconfig, topics), 'C') ||
        setweight(to_tsvector('english'::regconfig, coalesce(description, '')), 'D')
      ) stored`);
    this.addSql(`create index learning_opportunity_search on learning_opportunity using gin (search)`);
    this.addSql(`create index learning_opportunity_topics on learning_opportunity using gin (topics)`);
    // Each also carries the other two equality columns, so that a combination (format and
    // language) is counted from one index alone, never from the catalog's heap.
    const equality = ['format', 'language', 'provider_name'];
    for (const column of equality) {
      const others = equality.filter((c) => c !== column).join(', ');
      this.addSql(
        `create index learning_opportunity_by_${column} on learning_opportunity (status, ${column}, updated_at desc, id desc) include (${others})`,
      );
    }
    this.addSql(`create index lo_session_starts_at on lo_session (starts_at, learning_opportunity_id)`);
    // A record's sessions by start: its earliest session after now (sort=nextSessionStartsAt).
    this.addSql(`create index lo_session_record_starts_at on lo_session (learning_opportunity_id, starts_at)`);
    // Country and city as stored generated columns (not expression indexes): a plain column can be
    // read from its index alone, so a filter by country never visits the sessions' heap.
    this.addSql(`alter table lo_session add column country text generated always as (location->>'country') stored,
                                        add column city text generated always as (location->>'city') stored`);
    this.addSql(`create index lo_session_country on lo_session (country, learning_opportunity_id)`);
    this.addSql(`create index lo_session_city on lo_session (city, learning_opportunity_id)`);
    // The published records by id, with the equality columns: whether a record found through its
    // sessions is published, and its format, language and provider for the facets, read from this
    // index without visiting the catalog's heap.
    this.addSql(
      `create unique index learning_opportunity_published_id on learning_opportunity (id) include (format, language, provider_name) where status = 'PUBLISHED'`,
    );
  }
}
