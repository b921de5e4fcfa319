// Thin resolvers for the operator reads and actions of schema/console.graphql: the same service
// functions as `receivers test`, `deliveries dead` and `deliveries replay-dead` (no second data
// path), scope receivers:manage; currentApiKey tells a client which scopes the caller holds, and
// webhookEvents lists stored events as `events list` does.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { requireScope } from '../auth/bearer.ts';
import { parseId } from '../kernel/ids.ts';
import { badInput } from '../kernel/errors.ts';
import { listStoredEvents } from '../webhooks/delivery/attempt-reads.ts';
import { HISTORY_HOURS_DEFAULT, readDeliveryHistory } from '../webhooks/receivers/delivery-history.ts';
import { listDeadLetters, replayDeadLetters } from '../webhooks/delivery/redeliver.ts';
import { sendTestEvent } from '../webhooks/delivery/test-event.ts';
import type { GraphQLContext } from './resolvers.ts';

type Args = Record<string, unknown>;
const optionalId = (value: unknown, name: string): string | undefined =>
  value === undefined || value === null ? undefined : parseId(value, name);
const DEAD_LETTERS_MAX = 1000;
const EVENTS_DEFAULT = 50;
const EVENTS_MAX = 1000;

/** Reads wired whether or not receivers are managed here: the caller's own key (any GraphQL scope), and stored events (graphql:read). */
export function consoleReadResolvers(deps: { pool: Pool }) {
  return {
    Query: {
      currentApiKey: (_: unknown, _args: Args, ctx: GraphQLContext) => ({
        id: ctx.principal.keyId,
        scopes: [...ctx.principal.scopes].sort(),
      }),
      webhookEvents: async (_: unknown, args: Args, ctx: GraphQLContext) => {
        requireScope(ctx.principal, 'graphql:read');
        const limit = (args.limit as number | null | undefined) ?? EVENTS_DEFAULT;
        if (limit < 1 || limit > EVENTS_MAX)
          throw badInput([{ name: 'limit', reason: `must be an integer from 1 to ${EVENTS_MAX}` }]);
        return await listStoredEvents(deps.pool, {
          type: (args.type as string | null) ?? undefined,
          resourceId: optionalId(args.resourceId, 'resourceId'),
          limit,
        });
      },
    },
  };
}

export function consoleResolvers(deps: { pool: Pool; boss: PgBoss }) {
  const manage =
    <T>(run: (args: Args) => Promise<T>) =>
    async (_: unknown, args: Args, ctx: GraphQLContext) => {
      requireScope(ctx.principal, 'receivers:manage');
      return await run(args);
    };
  return {
    Query: {
      webhookDeliveryHistory: manage((args) =>
        readDeliveryHistory(deps.pool, (args.hours as number | null | undefined) ?? HISTORY_HOURS_DEFAULT),
      ),
      webhookDeadLetters: manage(async (args) => {
        const limit = (args.limit as number | null | undefined) ?? DEAD_LETTERS_MAX;
        if (limit < 1 || limit > DEAD_LETTERS_MAX)
          throw badInput([{ name: 'limit', reason: `must be an integer from 1 to ${DEAD_LETTERS_MAX}` }]);
        return await listDeadLetters(deps.pool, { receiverId: optionalId(args.receiverId, 'receiverId'), limit });
      }),
    },
    Mutation: {
      sendTestWebhookEvent: manage((args) => sendTestEvent(deps, parseId(args.receiverId, 'receiverId'))),
      replayWebhookDeadLetters: manage((args) =>
        replayDeadLetters(deps, {
          receiverId: parseId(args.receiverId, 'receiverId'),
          eventId: optionalId(args.eventId, 'eventId'),
          includeSuperseded: args.includeSuperseded === true,
        }),
      ),
    },
  };
}
