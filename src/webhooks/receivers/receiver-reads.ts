// Receivers as operators and GraphQL see them: never the secret (`hasSecret` only), with their
// delivery health and how many deliveries wait or lie in the dead letters: every receiver in one
// statement, and their counts in one more, asked of the queue (queue/receiver-jobs.ts groups them
// over pg-boss's job table, not looked up per receiver).
import type { Pool, PoolClient } from 'pg';
import type { EventType } from '../../events/derive-event.ts';
import { isoSql } from '../../db/iso-sql.ts';
import { notFound } from '../../kernel/errors.ts';
import type { AutoDisableReason } from '../queue/receiver-health-sql.ts';
import { bossInstalled } from '../queue/job-reads.ts';
import { deliveryCountsByReceiver, type DeliveryCounts } from '../queue/receiver-jobs.ts';
import type { SignatureScheme } from './signature-scheme.ts';
import { catchUpJsonSql } from '../catch-up/catch-up-sql.ts';
import { resyncJsonSql } from '../catch-up/resync-sql.ts';

/** Why a receiver is disabled: by an operator, or by the settling statement (queue/receiver-health-sql.ts). */
export type DisabledReason = 'manual' | AutoDisableReason;

export const DELIVERY_MODES = ['ALL_EVENTS', 'LATEST_STATE'] as const;
export type DeliveryMode = (typeof DELIVERY_MODES)[number];

/**
 * The catch-up of a receiver's last enable after it was disabled (webhooks/catch-up/): the records it
 * missed, each sent once in its latest state. `queued`: handed to the queue; `pending`: not delivered
 * yet (still to queue, or queued and not yet acknowledged; a dead-lettered one stays pending).
 */
export type CatchUp = { total: number; queued: number; pending: number; startedAt: string };

/**
 * A receiver's last resync on demand (webhooks/catch-up/resync.ts): the records it covered, each sent
 * once in its latest state. `queued`: handed to the queue; `pending`: not delivered yet (still to
 * queue, on its way, or dead-lettered); `skipped`: queued with nothing to send (no event of a
 * subscribed type); `since`: the time it was asked for, null for every published record.
 */
export type Resync = CatchUp & { skipped: number; since: string | null };

export type ReceiverInfo = {
  id: string;
  url: string;
  hasSecret: boolean;
  eventTypes: EventType[];
  /** ALL_EVENTS (every event, in order per record) or LATEST_STATE (only the newest waiting event of a record). */
  deliveryMode: DeliveryMode;
  enabled: boolean;
  /** Why it is disabled: by an operator, after WEBHOOK_DISABLE_AFTER_HOURS of failures, or a 410. */
  disabledReason: DisabledReason | null;
  disabledAt: string | null;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  /** Deliveries queued for it (not yet in flight). */
  waitingDeliveries: number;
  deadDeliveries: number;
  createdAt: string;
  /** How its deliveries are signed (signature-scheme.ts). */
  signatureScheme: SignatureScheme;
  /** While a Standard Webhooks rotation's grace runs: when the old secret stops signing; null otherwise. */
  previousSecretExpiresAt: string | null;
  /** Its last catch-up on enable; null when it never had one. */
  catchUp: CatchUp | null;
  /** Its last resync on demand; null when it never had one. */
  resync: Resync | null;
  /** At most this many deliveries start per second, across every worker (receivers/rate-cap.ts); null: no cap. */
  maxPerSecond: number | null;
  /**
   * It asked to be left alone until then (a 429 or 503 with Retry-After: delivery/retry-policy.ts):
   * none of its deliveries starts before; null: not paused. `receivers enable` ends it.
   */
  pausedUntil: string | null;
  /**
   * The view it subscribes to, as its canonical text (views/view.ts canonicalView: `country=de&format=ONLINE`):
   * it gets only the events of records in that view; null: every record.
   */
  view: string | null;
};

const columns = (
  installed: boolean,
) => `r.id, r.url, r.secret_ciphertext is not null or r.secret is not null as "hasSecret", r.event_types as "eventTypes", upper(r.delivery_mode) as "deliveryMode", r.enabled,
  r.disabled_reason as "disabledReason", ${isoSql('r.disabled_at')} as "disabledAt", ${isoSql('r.last_success_at')} as "lastSuccessAt",
  ${isoSql('r.last_failure_at')} as "lastFailureAt", ${isoSql('r.created_at')} as "createdAt",
  replace(r.signature_scheme, '_', '-') as "signatureScheme",
  case when r.previous_secret_expires_at > now() then ${isoSql('r.previous_secret_expires_at')} end as "previousSecretExpiresAt",
  ${catchUpJsonSql('r')} as "catchUp", ${resyncJsonSql('r', installed)} as "resync", r.max_per_second as "maxPerSecond",
  case when r.throttled_until > now() then ${isoSql('r.throttled_until')} end as "pausedUntil", r.view`;

// $1: one receiver id, or null for all. Before pg-boss's first start there is no job table (`installed` false).
const receiversSql = (installed: boolean) =>
  `select ${columns(installed)} from receiver r where $1::uuid is null or r.id = $1::uuid order by r.created_at, r.id`;
const WITH_JOBS_SQL = receiversSql(true);
const WITHOUT_JOBS_SQL = receiversSql(false);

/** One receiver; NOT_FOUND when there is none. */
export async function readReceiver(db: Pool | PoolClient, id: string): Promise<ReceiverInfo> {
  const [receiver] = await readReceivers(db, id);
  if (!receiver) throw notFound(`Receiver ${id}`);
  return receiver;
}

/** Every receiver (id null) or one, in creation order. */
export async function readReceivers(db: Pool | PoolClient, id: string | null): Promise<ReceiverInfo[]> {
  const installed = await bossInstalled(db);
  const { rows } = await db.query<Omit<ReceiverInfo, 'waitingDeliveries' | 'deadDeliveries'>>(
    installed ? WITH_JOBS_SQL : WITHOUT_JOBS_SQL,
    [id],
  );
  // Before pg-boss's first start nothing waits.
  const counts =
    installed && rows.length > 0 ? await deliveryCountsByReceiver(db, id) : new Map<string, DeliveryCounts>();
  return rows.map((r) => ({
    ...r,
    waitingDeliveries: counts.get(r.id)?.waiting ?? 0,
    deadDeliveries: counts.get(r.id)?.dead ?? 0,
  }));
}
