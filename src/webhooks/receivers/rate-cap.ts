// A receiver's rate cap (receiver.max_per_second, migration receiver_resync_and_rate_cap): at most that
// many of its deliveries start in any one-second window, across every worker and process. The cap is
// kept in one row per capped receiver (receiver_pace, written with the cap: setRateCap) as the generic
// cell rate algorithm (GCRA) keeps it: a theoretical arrival time `tat`, an emission interval T and a
// burst tolerance τ; a send at time t conforms when t >= tat - τ, and moves tat to max(tat, t) + T. A
// worker takes the tokens it can use at once in one statement (takeSendTokens: a primary-key update of
// that row, on the database's clock, so every worker shares one account) and starts those sends at
// once (delivery/rate-gate.ts).
//
// The parameters keep the bound exact, with room for the requests' jitter: with a tolerance τ =
// TOLERANCE_MS, a margin M = JITTER_MS and T = (1 s + τ + M) / cap, rounded up to the microsecond, at
// most ceil((1 s + M + τ) / T) <= cap takes fall in any window [t, t + 1 s + M) (GCRA's densest
// pattern: a burst of floor(τ / T) + 1, then one per T), so the receiver gets at most cap requests in
// any second while each arrives within M of its take (the statement's way back, the worker's event
// loop, the connection: a few ms on a local network; without M the bound was exact and a millisecond
// of jitter made it cap + 1 at the receiver). The first request after a pause can take longer (its
// connection is set up: 15 ms to a local receiver in a test, a TLS handshake more), and the second
// may come T - τ after the first: in that second the receiver can count cap + 1.
// The tolerance is what lets a worker ask a little early: asked again when its next token is due (the
// statement says when), its take arrives within τ of that moment despite the round trip and its
// timer's lag, and tat moves on by exactly T, so one worker alone keeps the full rate (with τ = 0 each
// late ask lost its lateness: 121 of 150 a second in a test). The sustained rate is cap × 1 s /
// (1 s + τ + M): 97% of the cap.
import type { Pool, PoolClient } from 'pg';
import { badInput } from '../../kernel/errors.ts';

/** GCRA's tolerance τ: how early a take may come (see above). */
export const TOLERANCE_MS = 20;
/** The margin M for the time from a take to its request's arrival (see above). */
export const JITTER_MS = 10;
export const MAX_PER_SECOND_MIN = 1;
export const MAX_PER_SECOND_MAX = 10_000;

/** A cap as callers give it (GraphQL Int, CLI word): a whole number from 1 to 10,000. */
export function parseMaxPerSecond(value: unknown): number {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < MAX_PER_SECOND_MIN || n > MAX_PER_SECOND_MAX)
    throw badInput([
      {
        name: 'maxPerSecond',
        reason: `must be a whole number of deliveries per second from ${MAX_PER_SECOND_MIN} to ${MAX_PER_SECOND_MAX.toLocaleString('en')}`,
      },
    ]);
  return n;
}

/** The pacing of a cap: the emission interval T and the tolerance τ, in µs (see above). */
export function paceOf(perSecond: number): { intervalUs: number; toleranceUs: number } {
  const toleranceUs = TOLERANCE_MS * 1000;
  return { intervalUs: Math.ceil((1_000_000 + toleranceUs + JITTER_MS * 1000) / perSecond), toleranceUs };
}

/** As parseMaxPerSecond; omitted or null: none (null). */
export const parseOptionalMaxPerSecond = (value: unknown): number | null =>
  value === undefined || value === null ? null : parseMaxPerSecond(value);

// $1 receiver id, $2 sends wanted now: its row only (a primary-key update; none: no cap). In an
// UPDATE every expression sees the row as it was: the count `n` is written out twice, for tat and
// granted. d = now - max(tat, now) (<= 0, in µs); n = floor((d + τ) / T) + 1 conform now, at most $2.
// The result: the sends granted now, and in how many ms the next one conforms.
const conforming = `least($2::int, greatest(0, floor((least(extract(epoch from now() - p.tat) * 1000000, 0) + p.tolerance_us) / p.interval_us)::int + 1))`;
const TAKE_SQL = `
  update receiver_pace p set tat = greatest(p.tat, now()) + ${conforming} * p.interval_us * interval '1 microsecond', granted = ${conforming}
   where p.receiver_id = $1
  returning p.granted, greatest(0, ceil((extract(epoch from p.tat - now()) * 1000000 - p.tolerance_us) / 1000))::int as "waitMs"`;

/** Sends granted now (0 or more), and in how many ms the next one is allowed. */
export type SendTokens = { granted: number; waitMs: number };

/**
 * Takes up to `wanted` send tokens of receiver `receiverId` now, in one statement; null when the
 * receiver has no cap (any more) or is gone. The tokens are for sends starting at once.
 */
export async function takeSendTokens(pool: Pool, receiverId: string, wanted: number): Promise<SendTokens | null> {
  const { rows } = await pool.query<SendTokens>({
    name: 'webhook-take-send-tokens',
    text: TAKE_SQL,
    values: [receiverId, wanted],
  });
  return rows[0] ?? null;
}

/**
 * Writes receiver `receiverId`'s cap (null: none) and its pace row with it, through `db` (the caller's
 * transaction): a new cap keeps the account (tat) of the one before, a first one starts from now.
 */
export async function setRateCap(
  db: Pick<PoolClient, 'query'>,
  receiverId: string,
  perSecond: number | null,
): Promise<void> {
  await db.query('update receiver set max_per_second = $2 where id = $1', [receiverId, perSecond]);
  if (perSecond === null) {
    await db.query('delete from receiver_pace where receiver_id = $1', [receiverId]);
    return;
  }
  const { intervalUs, toleranceUs } = paceOf(perSecond);
  await db.query(
    `insert into receiver_pace (receiver_id, tat, interval_us, tolerance_us, granted) values ($1, now(), $2, $3, 0)
     on conflict (receiver_id) do update set interval_us = excluded.interval_us, tolerance_us = excluded.tolerance_us`,
    [receiverId, intervalUs, toleranceUs],
  );
}
