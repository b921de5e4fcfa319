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
