// Thin resolvers for the operator reads and actions of schema/console.graphql: the same service
// functions as `receivers test`, `deliveries dead` and `deliveries replay-dead` (no second data
// path), scope receivers:manage; currentApiKey tells a client which scopes the caller holds.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { requireScope } from '../auth/bearer.ts';
import { parseId } from '../catalog/input.ts';
import { badInput } from '../errors.ts';
import { HISTORY_HOURS_DEFAULT, readDeliveryHistory } from '../webhooks/delivery-history.ts';
import { listDeadLetters, replayDeadLetters } from '../webhooks/redeliver.ts';
import { sendTestEvent } from '../webhooks/test-event.ts';
import type { GraphQLContext } from './resolvers.ts';

type Args = Record<string, unknown>;
const optionalId = (value: unknown, name: string): string | undefined => (value === undefined || value === null ? undefined : parseId(value, name));
const DEAD_LETTERS_MAX = 1000;

/** Any GraphQL scope: the caller's own key (wired whether or not receivers are managed here). */
export function currentApiKeyResolvers() {
  return { Query: { currentApiKey: (_: unknown, _args: Args, ctx: GraphQLContext) => ({ id: ctx.principal.keyId, scopes: [...ctx.principal.scopes].sort() }) } };
}

export function consoleResolvers(deps: { pool: Pool; boss: PgBoss }) {
  const manage = <T>(run: (args: Args) => Promise<T>) => async (_: unknown, args: Args, ctx: GraphQLContext) => {
    requireScope(ctx.principal, 'receivers:manage');
    return await run(args);
  };
  return {
    Query: {
      webhookDeliveryHistory: manage((args) => readDeliveryHistory(deps.pool, (args.hours as number | null | undefined) ?? HISTORY_HOURS_DEFAULT)),
      webhookDeadLetters: manage(async (args) => {
        const limit = (args.limit as number | null | undefined) ?? DEAD_LETTERS_MAX;
        if (limit < 1 || limit > DEAD_LETTERS_MAX) throw badInput([{ name: 'limit', reason: `must be an integer from 1 to ${DEAD_LETTERS_MAX}` }]);
        return await listDeadLetters(deps.pool, { receiverId: optionalId(args.receiverId, 'receiverId'), limit });
      }),
    },
    Mutation: {
      sendTestWebhookEvent: manage((args) => sendTestEvent(deps, parseId(args.receiverId, 'receiverId'))),
      replayWebhookDeadLetters: manage((args) =>
        replayDeadLetters(deps, { receiverId: parseId(args.receiverId, 'receiverId'), eventId: optionalId(args.eventId, 'eventId') }),
      ),
    },
  };
}
