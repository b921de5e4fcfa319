// The event store: one row per publicly observable change, with the exact body bytes delivered.
import { defineEntity, p } from '@mikro-orm/core';

export const Event = defineEntity({
  name: 'Event',
  tableName: 'event',
  properties: {
    id: p.uuid().primary(),
    type: p.text(),
    resourceId: p.uuid().index(),
    occurredAt: p.datetime(3),
    body: p.text(),
  },
});

export const eventEntities = [Event];
