// Prometheus metrics (prom-client), one registry for the process. Parts of the service increment
// these; GET /metrics renders the registry.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'lods_' });

export const httpRequestDuration = new Histogram({
  name: 'lods_http_request_duration_seconds',
  help: 'HTTP requests by method, route and status, with their durations',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const eventsEmitted = new Counter({
  name: 'lods_events_emitted_total',
  help: 'Events stored (and fanned out), by event type',
  labelNames: ['type'] as const,
  registers: [registry],
});

export const deliveryAttempts = new Counter({
  name: 'lods_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by outcome (success, http_error, timeout, connection_error, redirect, secret_unavailable, dead)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const deliveryDuration = new Histogram({
  name: 'lods_webhook_delivery_duration_seconds',
  help: 'Duration of webhook delivery attempts',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

/** Gauges whose values are read from the database when /metrics is scraped (set by collectors). */
export const queueDepth = new Gauge({
  name: 'lods_webhook_queue_depth',
  help: 'Webhook deliveries waiting or in flight',
  registers: [registry],
});
export const deadLetters = new Gauge({
  name: 'lods_webhook_dead_letters',
  help: 'Dead-lettered webhook deliveries',
  registers: [registry],
});
export const searchMarked = new Gauge({
  name: 'lods_search_marked_records',
  help: 'Records written since their last fold into the search bitmaps; above search_config.marked_max, searches and facet filters count their matches row by row until the fold',
  registers: [registry],
});
export const feedHorizonAge = new Gauge({
  name: 'lods_feed_horizon_age_seconds',
  help: 'How long the oldest running write transaction has been open: the change feed serves nothing past it until it ends',
  registers: [registry],
});

/** 1 while the API process's LISTEN connection is up (db/listen-connection.ts); 0 means nothing is cached (keys, record versions) and long polls re-read every second. */
export const listenConnectionUp = new Gauge({
  name: 'lods_listen_connection_up',
  help: 'Whether this API process listens for NOTIFY (key and record version caches, change feed wake-ups): 1 up, 0 down (keys looked up and conditional GETs read per request, long polls re-read every second)',
  registers: [registry],
});

export const receiversDisabled = new Counter({
  name: 'lods_webhook_receivers_disabled_total',
  help: 'Webhook receivers disabled, by reason (manual, failing, gone)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** The query class's admission (kernel/query-gate.ts): reads running, waiting, and refused by which limit. */
export const queryGateRunning = new Gauge({
  name: 'lods_query_running',
  help: 'Search, filter and facet list reads running in this process (at most QUERY_MAX_CONCURRENT)',
  registers: [registry],
});
export const queryGateWaiting = new Gauge({
  name: 'lods_query_waiting',
  help: 'Search, filter and facet list reads waiting for a slot (at most QUERY_QUEUE_WAIT_MS each)',
  registers: [registry],
});
export const queryGateRefused = new Counter({
  name: 'lods_query_refused_total',
  help: 'Search, filter and facet list reads refused with 429 after waiting, by the limit that was full (key: QUERY_MAX_CONCURRENT_PER_KEY, process: QUERY_MAX_CONCURRENT)',
  labelNames: ['limit'] as const,
  registers: [registry],
});
export const responsePaceRefused = new Counter({
  name: 'lods_response_pace_refused_total',
  help: 'Requests refused with 429 because their key was answered more bytes than RESPONSE_BYTES_PER_SECOND allows (its debt past the burst over 10 s)',
  registers: [registry],
});
export const calendarRenders = new Counter({
  name: 'lods_calendar_renders_total',
  help: 'calendars (GET /v1/calendar.ics) answered with a body, by whether it was rendered now or kept from an earlier request (cached)',
  labelNames: ['cached'] as const,
  registers: [registry],
});

export const keyConnectionsRefused = new Counter({
  name: 'lods_key_reads_refused_total',
  help: 'API reads refused with 429 after waiting, their key already holding DB_MAX_CONNECTIONS_PER_KEY connections of the main pool',
  registers: [registry],
});

export const readsCancelled = new Counter({
  name: 'lods_db_reads_cancelled_total',
  help: 'API reads cancelled in PostgreSQL, by reason (deadline: DB_READ_TIMEOUT_MS passed; disconnect: the client went away)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

let catchUpReader: (() => Promise<{ receiverId: string; pending: number }[]>) | null = null;
/**
 * Per receiver that had a catch-up on enable (webhooks/catch-up/): its records not delivered yet.
 * Read from the database at scrape time through the reader the API process sets (setCatchUpReader),
 * so every replica reports the same; no series when it cannot be read.
 */
export const catchUpPending = new Gauge({
  name: 'lods_webhook_catch_up_pending',
  help: 'Records of a receiver catch-up on enable not delivered yet (still to queue, or queued and not acknowledged), per receiver',
  labelNames: ['receiver'] as const,
  registers: [registry],
  async collect() {
    if (!catchUpReader) return;
    const rows = await catchUpReader().catch(() => null);
    this.reset();
    for (const row of rows ?? []) this.set({ receiver: row.receiverId }, row.pending);
  },
});
export function setCatchUpReader(reader: typeof catchUpReader): void {
  catchUpReader = reader;
}

let resyncReader: (() => Promise<{ receiverId: string; pending: number }[]>) | null = null;
/**
 * Per receiver that had a resync on demand (webhooks/catch-up/resync.ts): its records not delivered
 * yet, read from the database at scrape time through the reader the API process sets (setResyncReader).
 */
export const resyncPending = new Gauge({
  name: 'lods_webhook_resync_pending',
  help: 'Records of a receiver resync not delivered yet (still to queue, on their way, or dead-lettered), per receiver',
  labelNames: ['receiver'] as const,
  registers: [registry],
  async collect() {
    if (!resyncReader) return;
    const rows = await resyncReader().catch(() => null);
    this.reset();
    for (const row of rows ?? []) this.set({ receiver: row.receiverId }, row.pending);
  },
});
export function setResyncReader(reader: typeof resyncReader): void {
  resyncReader = reader;
}

/**
 * Takes of send tokens for receivers with a rate cap (webhooks/delivery/rate-gate.ts), one statement
 * each, by result: granted (at least one send allowed), denied (none: the receiver's rate is used up
 * for now), uncapped (its cap was removed).
 */
export const rateCapTakes = new Counter({
  name: 'lods_webhook_rate_cap_takes_total',
  help: 'Send token takes for rate-capped receivers (one statement each), by result: granted, denied, uncapped',
  labelNames: ['result'] as const,
  registers: [registry],
});
