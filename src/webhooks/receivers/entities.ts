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
    /** A plain secret left by a version before sealing; sealed and cleared at start (seal-secrets.ts). */
    secret: p.text().nullable(),
    /** The signing secret sealed with AES-256-GCM (secret-box.ts); never printed, logged or put in a job. */
    secretCiphertext: p.blob().nullable(),
    secretKeyId: p.text().nullable(),
    /** Subscribed event types; empty = all (the four names are plain identifiers, safe in text[]). */
    eventTypes: p.array(),
    enabled: p.boolean(),
    /** manual, failing or gone (auto-disable.ts); null while enabled. */
    disabledReason: p.text().nullable(),
    disabledAt: p.datetime(3).nullable(),
    failingSince: p.datetime(3).nullable(),
    lastSuccessAt: p.datetime(3).nullable(),
    lastFailureAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
});

export const webhookEntities = [Receiver];
