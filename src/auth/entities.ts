// API keys: only a SHA-256 hash of the key is stored; the key itself is shown once at creation.
import { defineEntity, p } from '@mikro-orm/core';

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    /** The first characters of the key, safe to show, so that operators can tell keys apart. */
    prefix: p.text(),
    keyHash: p.text().unique(),
    scopes: p.array(),
    createdAt: p.datetime(3),
    revokedAt: p.datetime(3).nullable(),
    /** Requests per minute; null: the service default (RATE_LIMIT_PER_MINUTE). */
    rateLimit: p.integer().nullable(),
  },
});

export const apiKeyEntities = [ApiKey];
