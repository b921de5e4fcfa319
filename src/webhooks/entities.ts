// Webhook receivers and delivery attempts. The worker reads and writes these tables in plain SQL
// (hot path); the entities serve the operator commands and keep the schema listed in one place.
import { defineEntity, p } from '@mikro-orm/core';

export const Receiver = defineEntity({
  name: 'Receiver',
  tableName: 'receiver',
  properties: {
    id: p.uuid().primary(),
    url: p.text(),
    /** Shared signing secret; never printed, logged or put in a job. */
    secret: p.text().nullable(),
    /** Subscribed event types; empty = all (the four names are plain identifiers, safe in text[]). */
    eventTypes: p.array(),
    enabled: p.boolean(),
    createdAt: p.datetime(3),
  },
});

export const DeliveryAttempt = defineEntity({
  name: 'DeliveryAttempt',
  tableName: 'delivery_attempt',
  properties: {
    id: p.bigint('string').primary().autoincrement(),
    eventId: p.uuid(),
    receiverId: p.uuid(),
    attempt: p.integer(),
    startedAt: p.datetime(3),
    durationMs: p.integer(),
    statusCode: p.integer().nullable(),
    error: p.text().nullable(),
    responseExcerpt: p.text().nullable(),
    outcome: p.text(),
    deadLettered: p.boolean(),
  },
});

export const webhookEntities = [Receiver, DeliveryAttempt];
