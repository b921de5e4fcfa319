import { Migration } from '@mikro-orm/migrations';

// HTTP caching (CONTRACT.md 8): the digest of each stored record, the ETag source.
export class Migration20261128000000_scaling extends Migration {
  override up(): void {
    // A stored generated column: PostgreSQL writes it in the same statement as `doc`, whatever
    // writes `doc` (mutations, seed, a re-render), so it can never disagree with the bytes served.
    // Adding it rewrites the table once (the backfill), under an exclusive lock: about a second
    // per 100,000 records here. md5 is a change detector here, not a security boundary.
    this.addSql(`alter table learning_opportunity add column doc_digest text generated always as (md5(doc)) stored`);
  }
}
