// Jobs without a lane (queue/lanes.ts), fetched by a worker: deliveries enqueued the pre-lanes way
// during an upgrade (a process of the old version still writing, or an old worker's retry, after the
// `delivery_lanes` migration had put the queue of that moment into lanes). Sent as they come, they
// would overtake, or be overtaken by, the record's deliveries in its lane. So before a fetched batch
// is sent, adoptLanelessJobs looks for them (one cheap statement per batch; the claims that
// settlements make are lane heads by construction and skip it), and when there are any (rare: only
// during an upgrade), puts them into their lanes in one transaction, the lanes locked in key order
// as everywhere else:
// - the oldest version becomes the lane's head (its job is sent) when the lane is idle, or when its
//   head is newer and not in flight (still queued, or fetched in this very batch: its job is deleted
//   and its event waits behind the older ones);
// - every other delivery waits in the lane, in version order, and its job is deleted (sent in turn,
//   attempt 1 again). A lane whose head job vanished is moved on by the sweeper.
// Test events (WEBHOOK_TEST: no record, no lane) are left alone, and so are the jobs of a removed
// receiver (a job in flight at the removal, handed back after it): a lane needs its receiver, and the
// worker drops such a job unsent (receiver_removed) as it would with a lane.
import type { Pool, PoolClient } from 'pg';
import { WEBHOOK_TEST_EVENT_TYPE } from '@lods/receiver-kit';
import { inTransaction } from '../../db/pg-transaction.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE, type DeliveryJob } from './boss.ts';

const FIND_SQL = `
  select f.job_id, f.event_id, f.receiver_id, e.resource_id, e.version::int as version
    from unnest($1::uuid[], $2::uuid[], $3::uuid[]) as f (job_id, event_id, receiver_id)
    join event e on e.id = f.event_id
    join receiver r on r.id = f.receiver_id
   where e.type <> '${WEBHOOK_TEST_EVENT_TYPE}' and not exists (select 1 from delivery_lane l where l.head_job = f.job_id)`;

const LOCK_SQL = `
  select l.receiver_id, l.resource_id, l.head_job, l.head_event, e.version::int as head_version,
         (select j.state from ${BOSS_SCHEMA}.job j where j.name = '${DELIVERY_QUEUE}' and j.id = l.head_job) as head_state,
         (select coalesce(array_agg(w.id order by w.n), '{}') from unnest(l.waiting) with ordinality as w (id, n)) as waiting,
         (select coalesce(array_agg(coalesce(we.version, 0)::int order by w.n), '{}') from unnest(l.waiting) with ordinality as w (id, n)
            left join event we on we.id = w.id) as waiting_versions
    from delivery_lane l
    left join event e on e.id = l.head_event
   where (l.receiver_id, l.resource_id) in (select * from unnest($1::uuid[], $2::uuid[]))
   order by l.receiver_id, l.resource_id
     for update of l`;

type Orphan = { job_id: string; event_id: string; receiver_id: string; resource_id: string; version: number };
type LockedLane = {
  receiver_id: string;
  resource_id: string;
  head_job: string | null;
  head_event: string | null;
  head_version: number | null;
  head_state: string | null;
  waiting: string[];
  waiting_versions: number[];
};
type Waiting = { event: string; version: number; job: string | null };

/**
 * Puts fetched jobs that have no lane into their lanes (see above); returns how many had none, and
 * the ids of the fetched jobs not to send now (deleted: their deliveries wait in their lanes).
 */
export async function adoptLanelessJobs(
  pool: Pool,
  jobs: readonly DeliveryJob[],
): Promise<{ laneless: number; moved: Set<string> }> {
  const { rows: orphans } = await pool.query<Orphan>({
    name: 'webhook-find-laneless',
    text: FIND_SQL,
    values: [jobs.map((j) => j.id), jobs.map((j) => j.data.eventId), jobs.map((j) => j.data.receiverId)],
  });
  if (orphans.length === 0) return { laneless: 0, moved: new Set() };
  const batch = new Set(jobs.map((j) => j.id));
  const moved = await inTransaction(pool, (client) => adopt(client, orphans, batch));
  return { laneless: orphans.length, moved };
}

async function adopt(client: PoolClient, orphans: Orphan[], batch: Set<string>): Promise<Set<string>> {
  const lanes = new Map<string, Orphan[]>();
  for (const o of orphans) {
    const key = `${o.receiver_id}/${o.resource_id}`;
    lanes.set(key, [...(lanes.get(key) ?? []), o]);
  }
  const keys = [...lanes.values()].map((os) => os[0]!);
  const [receivers, resources] = [keys.map((o) => o.receiver_id), keys.map((o) => o.resource_id)];
  await client.query(
    `insert into delivery_lane (receiver_id, resource_id) select * from unnest($1::uuid[], $2::uuid[]) as k (r, s) order by r, s on conflict do nothing`,
    [receivers, resources],
  );
  const { rows: locked } = await client.query<LockedLane>(LOCK_SQL, [receivers, resources]);
  const deleted: string[] = [];
  for (const lane of locked) {
    const mine = lanes.get(`${lane.receiver_id}/${lane.resource_id}`)!;
    const waiting: Waiting[] = [
      ...mine.map((o) => ({ event: o.event_id, version: o.version, job: o.job_id })),
      ...lane.waiting.map((event, i) => ({ event, version: lane.waiting_versions[i]!, job: null })),
    ];
    let head = lane.head_job ? { job: lane.head_job, event: lane.head_event! } : null;
    const oldest = Math.min(...mine.map((o) => o.version));
    // A newer head not in flight steps back behind the older deliveries.
    const movable = lane.head_state === 'created' || lane.head_state === 'retry' || batch.has(lane.head_job ?? '');
    if (head && movable && (lane.head_version ?? 0) > oldest) {
      waiting.push({ event: head.event, version: lane.head_version ?? 0, job: null });
      deleted.push(head.job);
      head = null;
    }
    waiting.sort((x, y) => x.version - y.version);
    if (!head) {
      const first = waiting.findIndex((w) => w.job !== null);
      const [taken] = waiting.splice(first, 1);
      head = { job: taken!.job!, event: taken!.event };
    }
    deleted.push(...waiting.flatMap((w) => (w.job ? [w.job] : [])));
    await client.query(
      `update delivery_lane set head_job = $3, head_event = $4, waiting = $5::uuid[], touched_at = now(),
              queued_version = greatest(queued_version, $6) where receiver_id = $1 and resource_id = $2`,
      [
        lane.receiver_id,
        lane.resource_id,
        head.job,
        head.event,
        waiting.map((w) => w.event),
        Math.max(...mine.map((o) => o.version)),
      ],
    );
  }
  await client.query(`delete from ${BOSS_SCHEMA}.job where name = $1 and id = any($2::uuid[]) and state <= 'active'`, [
    DELIVERY_QUEUE,
    deleted,
  ]);
  return new Set(deleted.filter((id) => batch.has(id)));
}
