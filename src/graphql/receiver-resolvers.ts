// Thin resolvers over webhooks/receivers/receivers.ts (scope receivers:manage): the same functions as the
// `receivers` commands. A secret goes in (create, rotate) and never comes out, except the one the
// service generated for a STANDARD_WEBHOOKS receiver, in the result of the call that generated it.
import { requireScope } from '../auth/bearer.ts';
import { parseId } from '../kernel/ids.ts';
import {
  addReceiver,
  disableReceiver,
  enableReceiver,
  getReceiver,
  listReceivers,
  type ReceiverDeps,
  type ReceiverInfo,
  removeReceiver,
  resyncReceiver,
  rotateReceiverSecret,
  updateReceiver,
} from '../webhooks/receivers/receivers.ts';
import type { GraphQLContext } from './resolvers.ts';
import { exportCatchUpGauge } from '../webhooks/catch-up/catch-up.ts';
import { exportResyncGauge } from '../webhooks/catch-up/resync.ts';

type Args = Record<string, unknown>;
type Input = {
  url?: string | null;
  secret?: string | null;
  types?: string[] | null;
  signatureScheme?: string | null;
  deliveryMode?: string | null;
  maxPerSecond?: number | null;
  view?: string | null;
};

export function receiverResolvers(deps: ReceiverDeps) {
  // The API process that manages receivers reports their catch-ups and resyncs on /metrics (read at scrape time).
  exportCatchUpGauge(deps.pool);
  exportResyncGauge(deps.pool);
  const manage =
    <T>(run: (args: Args) => Promise<T>) =>
    async (_: unknown, args: Args, ctx: GraphQLContext) => {
      requireScope(ctx.principal, 'receivers:manage');
      return await run(args);
    };
  const input = (args: Args) => args.input as Input;
  return {
    Query: {
      webhookReceivers: manage(() => listReceivers(deps)),
      webhookReceiver: manage((args) => getReceiver(deps, parseId(args.id))),
    },
    Mutation: {
      createWebhookReceiver: manage((args) =>
        addReceiver(deps, {
          url: input(args).url!,
          secret: input(args).secret,
          types: input(args).types ?? [],
          scheme: input(args).signatureScheme,
          mode: input(args).deliveryMode,
          maxPerSecond: input(args).maxPerSecond,
          view: input(args).view,
        }),
      ),
      updateWebhookReceiver: manage((args) =>
        updateReceiver(deps, parseId(args.id), {
          url: input(args).url,
          types: input(args).types,
          scheme: input(args).signatureScheme,
          mode: input(args).deliveryMode,
          // Omitted keeps the cap and the view, null removes them.
          maxPerSecond: input(args).maxPerSecond,
          view: input(args).view,
        }),
      ),
      disableWebhookReceiver: manage((args) => disableReceiver(deps, parseId(args.id))),
      enableWebhookReceiver: manage((args) => enableReceiver(deps, parseId(args.id))),
      // DateTime is a plain scalar: `since` is checked as the CLI's --since is (receiver-input.ts parseSince).
      resyncWebhookReceiver: manage((args) => resyncReceiver(deps, parseId(args.id), { since: args.since })),
      deleteWebhookReceiver: manage(async (args) => {
        const removed = await removeReceiver(deps, parseId(args.id));
        return { id: removed.id, removedDeliveries: removed.removedJobs };
      }),
      rotateWebhookReceiverSecret: manage((args) =>
        rotateReceiverSecret(deps, parseId(args.id), {
          secret: args.secret as string | null | undefined,
          graceHours: args.graceHours as number | null | undefined,
        }),
      ),
    },
    WebhookReceiver: {
      disabledReason: (receiver: ReceiverInfo) => receiver.disabledReason?.toUpperCase() ?? null,
      signatureScheme: (receiver: ReceiverInfo) => receiver.signatureScheme.toUpperCase().replace('-', '_'),
      // Only the create or rotate call that generated it carries one (ReceiverWithSecret).
      secret: (receiver: ReceiverInfo & { secret?: string }) => receiver.secret ?? null,
    },
  };
}
