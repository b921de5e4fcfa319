// A receiver's dead letters (scope receivers:manage) on its page, with "Replay" per letter and
// "Replay all" (replayWebhookDeadLetters, as `deliveries replay-dead`).
import { gql } from './api.js';
import { h, NONE, table, when } from './dom.js';
import { eventTypeLabel, setAsideLabel } from './labels.js';

const plural = (n) => `${n} dead letter${n === 1 ? '' : 's'}`;

export async function deadLettersSection(ctx, id) {
  const { webhookDeadLetters: letters } = await gql(
    `query($id: ID!) { webhookDeadLetters(receiverId: $id) { eventId eventType attempts lastError lastAttemptAt deadSince } }`,
    { id },
  );
  const replay = (eventId) => async () => {
    const { replayWebhookDeadLetters: r } = await gql(
      'mutation($id: ID!, $eventId: ID) { replayWebhookDeadLetters(receiverId: $id, eventId: $eventId) { replayed superseded remaining } }',
      { id, eventId },
    );
    // A superseded letter would regress the receiver (its record has a newer delivery to it): skipped, and said so.
    const skipped = `${plural(r.superseded)} skipped as superseded (this receiver already got their version or a newer one, or a newer one is pending; \`deliveries replay-dead --include-superseded\` sends them anyway)`;
    return {
      message: r.replayed
        ? `Replayed ${plural(r.replayed)}${r.superseded ? `; ${skipped}` : ''}; ${r.remaining} remain.`
        : r.superseded
          ? `Nothing replayed: ${skipped}; ${r.remaining} remain.`
          : `Nothing replayed (is the receiver disabled? enable it first); ${r.remaining} remain.`,
    };
  };
  return h(
    'section',
    { class: 'dead-letters' },
    letters.length
      ? h('p', {}, h('button', { type: 'button', onclick: () => ctx.act(replay(null)) }, 'Replay all'))
      : null,
    table(
      [
        ['Event', (l) => h('a', { href: `#/events/${l.eventId}` }, l.eventId)],
        ['Type', (l) => eventTypeLabel(l.eventType)],
        ['Attempts', (l) => String(l.attempts)],
        ['Last error', (l) => (l.lastError ? setAsideLabel(l.lastError) : NONE)],
        ['Last attempt', (l) => when(l.lastAttemptAt)],
        ['Dead since', (l) => when(l.deadSince)],
        ['Actions', (l) => h('button', { type: 'button', onclick: () => ctx.act(replay(l.eventId)) }, 'Replay')],
      ],
      letters,
      'No dead letters.',
    ),
  );
}
