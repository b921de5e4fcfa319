import { Migration } from '@mikro-orm/migrations';

// HTTP caching (docs/contract.md, "Caching"): the digest of each stored record, the ETag source. Rate
// limits (docs/contract.md, "Rate limits"): a per-key override and the usage the API processes share.
export class Migration20261128000000_scaling extends Migration {
  override up(): void {
    // A stored generated column: PostgreSQL writes it in the same statement as `doc`, whatever
    // writes `doc` (mutations, seed, a re-render), so it can never disagree with the bytes served.
    // Adding it rewrites the table once (the backfill), under an exclusive lock: about a second
    // per 100,000 records here. md5 is a change detector here, not a security boundary.
    this.addSql(`alter table learning_opportunity add column doc_digest text generated always as (md5(doc)) stored`);

    // Requests per minute for this key; null: RATE_LIMIT_PER_MINUTE.
    this.addSql(`alter table api_key add column rate_limit integer check (rate_limit > 0)`);
    // Requests admitted per key and fixed one-minute window, summed over every API process: each
    // adds what it admitted since its last sync (about once a second) and reads the total back.
    // Rows of past windows are deleted by the same processes.
    this.addSql(`
      create table rate_limit_usage (
        key_id uuid not null references api_key (id) on delete cascade,
        window_start timestamptz not null,
        used bigint not null,
        primary key (key_id, window_start)
      )`);
  }
}
