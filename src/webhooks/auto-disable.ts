// Receiver health, kept after the settlement of each batch of attempts (record-attempt.ts) in one
// statement: the last success and failure times, `failing_since` (the first failure after the last
// success or `enable`; null while healthy), and automatic disabling. A receiver is disabled when
// every attempt has failed for WEBHOOK_DISABLE_AFTER_HOURS (measured between attempt start times, so
// it needs attempts at both ends, never a clock of its own), or at once when it answers 410 Gone.
// Its waiting deliveries then become dead letters in the same transaction.
//
// Rows are locked in id order (FOR NO KEY UPDATE, which does not conflict with the attempt inserts'
// foreign-key locks), so that two workers settling overlapping receivers cannot deadlock.
import type { PoolClient } from 'pg';
import type { Db, PgBoss } from 'pg-boss';
import type { Logger } from '../logger.ts';
import { receiversDisabled } from '../metrics.ts';
import type { DisabledReason } from './receiver-reads.ts';
import type { Settled } from './record-attempt.ts';
import { setAsideWaitingDeliveries } from './set-aside.ts';

const GONE = 410;

const HEALTH_SQL = `
  with a as (
    select * from unnest($1::uuid[], $2::boolean[], $3::boolean[], $4::timestamptz[]) as a (receiver_id, ok, gone, started_at)
  ), s as (
    select receiver_id, max(started_at) filter (where ok) as last_ok, max(started_at) filter (where not ok) as last_fail from a group by receiver_id
  ), h as (
    -- after the batch's last success: the first failure, and whether a 410 came
    select s.receiver_id, s.last_ok, s.last_fail,
           min(a.started_at) filter (where not a.ok and a.started_at > coalesce(s.last_ok, '-infinity')) as first_fail,
           coalesce(bool_or(a.gone and a.started_at > coalesce(s.last_ok, '-infinity')), false) as gone
      from s join a using (receiver_id)
     group by s.receiver_id, s.last_ok, s.last_fail
  ), locked as (
    select id, enabled, failing_since from receiver where id in (select receiver_id from s) order by id for no key update
  ), next as (
    select l.id, h.last_ok, h.last_fail, f.failing_since,
           case when not l.enabled then null
                when h.gone then 'gone'
                when $5::int > 0 and f.failing_since <= h.last_fail - make_interval(hours => $5::int) then 'failing' end as reason
      from locked l join h on h.receiver_id = l.id
      cross join lateral (select case when h.first_fail is null then null when h.last_ok is null then coalesce(l.failing_since, h.first_fail) else h.first_fail end as failing_since) f
  ), updated as (
    update receiver r
       set last_success_at = greatest(r.last_success_at, n.last_ok),
           last_failure_at = greatest(r.last_failure_at, n.last_fail),
           failing_since = n.failing_since,
           enabled = r.enabled and n.reason is null,
           disabled_reason = coalesce(n.reason, r.disabled_reason),
           disabled_at = case when n.reason is null then r.disabled_at else now() end
      from next n
     where r.id = n.id
    returning r.id, n.reason, n.failing_since
  )
  select id, reason, failing_since::text as "failingSince" from updated where reason is not null`;

export async function recordReceiverHealth(
  deps: { boss: PgBoss; client: PoolClient; db: Db; disableAfterHours: number; logger: Logger },
  settled: readonly Pick<Settled, 'data' | 'startedAt' | 'result'>[],
): Promise<void> {
  if (settled.length === 0) return;
  const { rows } = await deps.client.query<{ id: string; reason: DisabledReason; failingSince: string | null }>({
    name: 'webhook-receiver-health',
    text: HEALTH_SQL,
    values: [settled.map((s) => s.data.receiverId), settled.map((s) => s.result.outcome === 'success'), settled.map((s) => s.result.statusCode === GONE), settled.map((s) => s.startedAt), deps.disableAfterHours],
  });
  if (rows.length === 0) return;
  const setAside = await setAsideWaitingDeliveries(deps, rows.map((r) => r.id));
  for (const r of rows) {
    receiversDisabled.inc({ reason: r.reason });
    deps.logger.warn({ receiverId: r.id, reason: r.reason, failingSince: r.failingSince, disableAfterHours: deps.disableAfterHours }, 'receiver disabled automatically');
  }
  if (setAside) deps.logger.info({ receivers: rows.length, setAside }, 'waiting deliveries of disabled receivers set aside as dead letters');
}
