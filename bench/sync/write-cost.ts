// What the feed costs a writer: the same mutations (archive, then publish again: one event each)
// with the feed's column, index and NOTIFY trigger and the views' state triggers (migration
// view_states: the one on event reads the feed's column, those on learning_opportunity feed it), and
// with them removed (the schema before migration change_feed), in alternating rounds so that drift
// hits both alike. The scratch database's view states are stale after the rounds without them.
import type { Pool } from 'pg';
import type { CatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { percentile } from '../delivery/stats.ts';

const VIEW_STATE_TRIGGERS = [
  ['event', 'event_view_states'],
  ['learning_opportunity', 'view_state_capture_update'],
  ['learning_opportunity', 'view_state_capture_delete'],
];
const viewStateTriggers = (action: 'enable' | 'disable') =>
  VIEW_STATE_TRIGGERS.map(([table, trigger]) => `alter table ${table} ${action} trigger ${trigger}`);
const FEED_OFF = [
  ...viewStateTriggers('disable'),
  'drop trigger event_feed_notify on event',
  'drop index event_feed_order',
  'alter sequence event_position_seq owned by none',
  'alter table event drop column xid, drop column position',
];
const FEED_ON = [
  `alter table event add column xid xid8 not null default pg_current_xact_id(), add column position bigint not null default nextval('event_position_seq')`,
  'alter sequence event_position_seq owned by event.position',
  'create unique index event_feed_order on event (xid, position)',
  'create trigger event_feed_notify after insert on event for each statement execute function event_feed_notify()',
  ...viewStateTriggers('enable'),
];

/** Archives and republishes `ids` (2 mutations, 2 events each); returns ms per mutation. */
export async function mutate(writes: CatalogWrites, ids: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const id of ids) await writes.archive(id);
  for (const id of ids) await writes.publish(id);
  return (performance.now() - started) / (ids.length * 2);
}

export async function measureWriteCost(
  pool: Pool,
  writes: CatalogWrites,
  ids: readonly string[],
  rounds: number,
): Promise<{ withFeed: number; withoutFeed: number }> {
  const withFeed: number[] = [];
  const withoutFeed: number[] = [];
  await mutate(writes, ids.slice(0, 50)); // warm-up
  for (let round = 0; round < rounds; round++) {
    withFeed.push(await mutate(writes, ids));
    try {
      for (const sql of FEED_OFF) await pool.query(sql);
      await mutate(writes, ids.slice(0, 10)); // the first statements after DDL re-plan
      withoutFeed.push(await mutate(writes, ids));
    } finally {
      for (const sql of FEED_ON) await pool.query(sql);
    }
    await mutate(writes, ids.slice(0, 10));
  }
  // Medians of many short rounds: a neighbour's burst spoils a round or two, not the figure.
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  return { withFeed: median(withFeed), withoutFeed: median(withoutFeed) };
}
