// The claims of a settling statement (settle-jobs.ts): the deliveries that lanes moved up, inserted
// already claimed by the settling worker, one per settlement at most, on the settlement's own row with
// its event's columns as plain values; the claims' receivers on the first row.
import { DELIVERY_QUEUE, type DeliveryJob, type DeliveryJobData } from './boss.ts';
import type { EventRow, ReceiverRow } from './send-rows.ts';

/**
 * With `claim`, the deliveries that lanes moved up, inserted as claims of the caller (send them, or
 * hand them back), with the rows of their events and receivers (delivery/load-targets.ts
 * targetsFromRows) and the ids of those behind which more events of their record wait (`followed`).
 */
export type Claims = { jobs: DeliveryJob[]; events: EventRow[]; receivers: ReceiverRow[]; followed: Set<string> };

/** The claim columns of a settling statement's row (all null for a settlement that claimed nothing). */
export type ClaimColumns = {
  claimId: string | null;
  claimData: DeliveryJobData | null;
  claimExpireSeconds: number | null;
  claimGroupId: string | null;
  claimFollowed: boolean | null;
  claimEventId: string | null;
  claimEventType: string | null;
  claimEventVersion: string | null;
  claimEventBody: string | null;
  claimedReceivers: ReceiverRow[] | null;
};

/** The claims of a settling statement's rows, with their events and receivers. */
export function claimsOf(rows: readonly ClaimColumns[]): Claims {
  const claims: Claims = { jobs: [], events: [], receivers: rows[0]?.claimedReceivers ?? [], followed: new Set() };
  for (const r of rows) {
    if (r.claimId === null || r.claimData === null) continue;
    // As pg-boss's fetch returns a job, without the AbortSignal it adds for its own work handlers.
    claims.jobs.push({
      id: r.claimId,
      name: DELIVERY_QUEUE,
      data: r.claimData,
      retryCount: 0,
      expireInSeconds: r.claimExpireSeconds!,
      heartbeatSeconds: null,
      groupId: r.claimGroupId,
    } as DeliveryJob);
    if (r.claimFollowed) claims.followed.add(r.claimId);
    // Missing when the event committed after this statement's snapshot: the loader reads it (load-batch.ts).
    if (r.claimEventId !== null)
      claims.events.push({
        id: r.claimEventId,
        type: r.claimEventType!,
        version: r.claimEventVersion!,
        body: r.claimEventBody!,
      });
  }
  return claims;
}
