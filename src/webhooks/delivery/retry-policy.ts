// What follows a failed attempt: another attempt after an exponential delay (in milliseconds, so that
// small test values work; pg-boss's own retry delays are whole seconds), or a dead letter once
// WEBHOOK_MAX_ATTEMPTS attempts have been made.
import type { WebhookConfig } from '../queue/boss.ts';

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

/** What follows an attempt; a dead letter set aside because its receiver was disabled (not out of attempts) says so. */
export type NextStep =
  { kind: 'done' } | { kind: 'retry'; delayMs: number } | { kind: 'dead'; reason?: 'receiver_disabled' };

export function nextStep(
  succeeded: boolean,
  attempt: number,
  config: Pick<WebhookConfig, 'maxAttempts' | 'backoffBaseMs' | 'backoffMaxMs'>,
): NextStep {
  if (succeeded) return { kind: 'done' };
  if (attempt >= config.maxAttempts) return { kind: 'dead' };
  return { kind: 'retry', delayMs: retryDelayMs(attempt, config) };
}
