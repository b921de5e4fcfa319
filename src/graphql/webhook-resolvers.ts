// Thin resolvers over the stored events and delivery attempts (graphql:read).
import type { Pool } from 'pg';
import { requireScope } from '../auth/bearer.ts';
import { parseId } from '../kernel/ids.ts';
import { parsePagingArgs } from '../kernel/paging.ts';
import {
  type AttemptView,
  getStoredEvent,
  listAttempts,
  type StoredEventView,
} from '../webhooks/delivery/attempt-reads.ts';
import type { GraphQLContext } from './resolvers.ts';

type Args = Record<string, unknown>;
const optionalId = (value: unknown, name: string): string | undefined =>
  value === undefined || value === null ? undefined : parseId(value, name);

export function webhookResolvers(deps: { pool: Pool }) {
  const reader = (ctx: GraphQLContext) => requireScope(ctx.principal, 'graphql:read');
  return {
    Query: {
      async event(_: unknown, args: Args, ctx: GraphQLContext) {
        reader(ctx);
        return await getStoredEvent(deps.pool, parseId(args.id));
      },
      async deliveryAttempts(_: unknown, args: Args, ctx: GraphQLContext) {
        reader(ctx);
        const { limit, offset } = parsePagingArgs(args);
        const outcome = typeof args.outcome === 'string' ? args.outcome.toLowerCase() : undefined;
        return await listAttempts(deps.pool, {
          eventId: optionalId(args.eventId, 'eventId'),
          receiverId: optionalId(args.receiverId, 'receiverId'),
          outcome,
          limit,
          offset,
        });
      },
    },
    WebhookEvent: {
      // Batched per request: a page of events costs one attempts statement, not one per event.
      async attempts(event: StoredEventView, args: Args, ctx: GraphQLContext) {
        const { limit, offset } = parsePagingArgs(args);
        return await ctx.eventAttempts(event.id, {
          receiverId: optionalId(args.receiverId, 'receiverId'),
          limit,
          offset,
        });
      },
    },
    DeliveryAttempt: {
      outcome: (attempt: AttemptView) => attempt.outcome.toUpperCase(),
    },
  };
}
