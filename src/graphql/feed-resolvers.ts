// The change feed for internal readers: the same read as GET /v1/events (feed/feed-reads.ts).
import { requireScope } from '../auth/bearer.ts';
import { encodeCursor } from '../feed/cursor.ts';
import { parseFeedArgs } from '../feed/feed-query.ts';
import type { FeedReads } from '../feed/feed-reads.ts';
import type { StoredEventView } from '../webhooks/delivery/attempt-reads.ts';
import type { GraphQLContext } from './resolvers.ts';

type Body = { id: string; type: string; occurredAt: string; resource: { id: string } };

export function feedResolvers(deps: { reads: FeedReads }) {
  return {
    Query: {
      async events(_: unknown, args: { after?: string | null; limit?: number | null }, ctx: GraphQLContext) {
        requireScope(ctx.principal, 'graphql:read');
        const query = parseFeedArgs(args);
        const page = await deps.reads.page(query, false, ctx.signal);
        return {
          results: page.results.map((body): StoredEventView => {
            const event = JSON.parse(body) as Body;
            return {
              id: event.id,
              type: event.type,
              occurredAt: event.occurredAt,
              resourceId: event.resource.id,
              inFeed: true, // the feed's own
              body,
            };
          }),
          pagination: {
            limit: query.limit,
            after: page.after && encodeCursor(page.after),
            next: encodeCursor(page.next),
            hasMore: page.hasMore,
          },
        };
      },
    },
  };
}
