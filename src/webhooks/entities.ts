// Webhook receivers, for the operator commands. The worker reads receivers and writes
// delivery_attempt in plain SQL (hot path); delivery_attempt has no entity, since nothing reads or
// writes it through the ORM (its columns are listed in the migrations and attempt-reads.ts).
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

export const webhookEntities = [Receiver];
