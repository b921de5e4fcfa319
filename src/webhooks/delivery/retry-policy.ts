// What follows an attempt: another attempt after an exponential delay (in milliseconds, so that
// small test values work; pg-boss's own retry delays are whole seconds), or a dead letter once
// WEBHOOK_MAX_ATTEMPTS attempts have been made.
//
// Backpressure: a receiver that answers 429 or 503 with a valid Retry-After (delta-seconds or an
// HTTP-date; parseRetryAfter) asks to be left alone that long. Such an answer is `throttled`: the
// delivery is retried no sooner than that, and the answer counts neither toward the delivery's
// attempts (WEBHOOK_MAX_ATTEMPTS) nor toward the receiver's health (automatic disabling), as long as
// the delivery stays within THROTTLE_LIMITS (its throttled answers, and the total of the waits they
// asked for); past them an answer counts as the failure it is (`http_error`), still waiting at least
// its Retry-After. So a receiver answering 429 for ever holds a delivery at most that long.
import type { DeliveryJobData, WebhookConfig } from '../queue/boss.ts';

/** The longest wait one Retry-After can ask for; a longer one is cut to this. */
export const RETRY_AFTER_MAX_MS = 60 * 60 * 1000;
/** The shortest wait after a throttled answer (a Retry-After of 0 or a date already past included): no burst of immediate retries. */
export const RETRY_AFTER_MIN_MS = 1000;

/** How much throttling one delivery is allowed before a throttled answer counts as a failed attempt. */
export type ThrottleLimits = {
  /** Throttled answers not counted, per delivery. */
  maxAnswers: number;
  /** The total of their Retry-After waits, per delivery (ms). */
  maxWaitMs: number;
};
/** At most 100 throttled answers and 24 hours of waiting asked for by them, per delivery. */
export const THROTTLE_LIMITS: ThrottleLimits = { maxAnswers: 100, maxWaitMs: 24 * 60 * 60 * 1000 };

const DELTA_SECONDS = /^\d+$/;
// The three forms of HTTP-date (RFC 9110 5.6.7) all start with the day's name.
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*[, ]/;

/**
 * The wait a Retry-After header asks for, in ms from `nowMs`, between RETRY_AFTER_MIN_MS and
 * RETRY_AFTER_MAX_MS; null when there is none or it is neither delta-seconds nor an HTTP-date.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  let ms: number;
  if (DELTA_SECONDS.test(text)) ms = Number(text) * 1000;
  else if (HTTP_DATE.test(text)) {
    // asctime's form carries no zone: HTTP dates are GMT, not the worker's local time.
    const at = Date.parse(/ GMT$/.test(text) ? text : `${text} GMT`);
    if (Number.isNaN(at)) return null;
    ms = at - nowMs;
  } else return null;
  return Math.min(RETRY_AFTER_MAX_MS, Math.max(RETRY_AFTER_MIN_MS, ms));
}

/** The nominal delay after failed attempt `attempt` (1-based): base * 2^(attempt-1), capped. */
export function nominalRetryDelayMs(
  attempt: number,
  config: Pick<WebhookConfig, 'backoffBaseMs' | 'backoffMaxMs'>,
): number {
  return Math.min(config.backoffMaxMs, config.backoffBaseMs * 2 ** Math.min(attempt - 1, 40));
}

/**
 * The delay actually used: up to 20% shorter than nominal, so that deliveries that failed together
 * (a receiver outage) do not all come back at the same instant. Never above the cap, and still
 * growing from one attempt to the next until it reaches the cap.
 */
export function retryDelayMs(
  attempt: number,
  config: Pick<WebhookConfig, 'backoffBaseMs' | 'backoffMaxMs'>,
  random: () => number = Math.random,
): number {
  return Math.round(nominalRetryDelayMs(attempt, config) * (1 - 0.2 * random()));
}

/**
 * What follows an attempt; a dead letter set aside because its receiver was disabled (not out of
 * attempts) says so. A retry carries the delivery's throttling so far (`throttled` answers not
 * counted, `throttledMs` the waits they asked for) and its attempts lost with their worker (`lost`)
 * to its next job.
 */
export type NextStep =
  | { kind: 'done' }
  | { kind: 'retry'; delayMs: number; throttled?: number; throttledMs?: number; lost?: number }
  | { kind: 'dead'; reason?: 'receiver_disabled' };

/** What the policy reads of an attempt: its outcome and, for a 429 or 503 with a valid Retry-After, the wait asked for. */
export type AttemptAnswer = { outcome: string; retryAfterMs?: number | null };

/**
 * Attempts of the delivery that count toward WEBHOOK_MAX_ATTEMPTS, this one included (throttled
 * answers within the limits do not, nor attempts lost with their worker: WEBHOOK_LOST_RETRY_LIMIT bounds each attempt's losses).
 */
export function countedAttempts(data: Pick<DeliveryJobData, 'attempt' | 'throttled' | 'lost'>): number {
  return data.attempt - (data.throttled ?? 0) - (data.lost ?? 0);
}

/**
 * A throttled answer as it is recorded: `throttled` while the delivery is within `limits` (this answer
 * included), else `http_error` (a failed attempt like any other, keeping its Retry-After).
 */
export function withinThrottleLimits<T extends AttemptAnswer>(
  answer: T,
  data: Pick<DeliveryJobData, 'throttled' | 'throttledMs'>,
  limits: ThrottleLimits = THROTTLE_LIMITS,
): T {
  if (answer.outcome !== 'throttled') return answer;
  const answers = (data.throttled ?? 0) + 1;
  const waitedMs = (data.throttledMs ?? 0) + (answer.retryAfterMs ?? 0);
  return answers <= limits.maxAnswers && waitedMs <= limits.maxWaitMs
    ? answer
    : ({ ...answer, outcome: 'http_error' } as T);
}

export function nextStep(
  answer: AttemptAnswer,
  data: Pick<DeliveryJobData, 'attempt' | 'throttled' | 'throttledMs' | 'lost'>,
  config: Pick<WebhookConfig, 'maxAttempts' | 'backoffBaseMs' | 'backoffMaxMs'>,
): NextStep {
  if (answer.outcome === 'success') return { kind: 'done' };
  const throttled = data.throttled ?? 0;
  const throttledMs = data.throttledMs ?? 0;
  const lost = data.lost ?? 0;
  const asked = answer.retryAfterMs ?? 0;
  // Not counted: the same attempt number is not reused (attempt rows stay 1, 2, 3, ...), the job counts it aside.
  if (answer.outcome === 'throttled')
    return { kind: 'retry', delayMs: asked, throttled: throttled + 1, throttledMs: throttledMs + asked, lost };
  const counted = countedAttempts(data);
  if (counted >= config.maxAttempts) return { kind: 'dead' };
  return { kind: 'retry', delayMs: Math.max(retryDelayMs(counted, config), asked), throttled, throttledMs, lost };
}
