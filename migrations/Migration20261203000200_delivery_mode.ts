import { Migration } from '@mikro-orm/migrations';

// Delivery modes per receiver (docs/contract.md, "Delivery guarantees"): 'all_events' (default: every event, in order
// per record) or 'latest_state' (a waiting delivery superseded by a newer event of the same record
// is not sent; its attempt row says `superseded`).
export class Migration20261203000200_delivery_mode extends Migration {
  override up(): void {
    this.addSql(
      `alter table receiver add column delivery_mode text not null default 'all_events' check (delivery_mode in ('all_events', 'latest_state'))`,
    );
  }
}
