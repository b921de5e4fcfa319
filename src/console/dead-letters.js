// A receiver's dead letters (scope receivers:manage) on its page, with "Replay" per letter and
// "Replay all" (replayWebhookDeadLetters, as `deliveries replay-dead`).
import { gql } from './api.js';
import { h, NONE, plural, table, when } from './dom.js';
import { eventTypeLabel, setAsideLabel } from './labels.js';

const deadLetters = (n) => plural(n, 'dead letter');

/** `receiver`: its id and whether it is enabled (a disabled receiver's letters are replayed after Enable). */
export async function deadLettersSection(ctx, receiver) {
  const { id, enabled } = receiver;
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
    const skipped = `${deadLetters(r.superseded)} skipped as superseded (this receiver already got their version or a newer one, or a newer one is pending; the CLI's deliveries replay-dead --include-superseded sends them anyway)`;
    return {
      message: r.replayed
        ? `Replayed ${deadLetters(r.replayed)}${r.superseded ? `; ${skipped}` : ''}; ${r.remaining} remain.`
        : r.superseded
          ? `Nothing replayed: ${skipped}; ${r.remaining} remain.`
          : `Nothing replayed (is the receiver disabled? enable it first); ${r.remaining} remain.`,
    };
  };
  // Disabled, the receiver is sent nothing: Replay waits for Enable, and says so instead of answering "nothing".
  const replayButton = (label, eventId) =>
    h(
      'button',
      enabled
        ? { type: 'button', onclick: () => ctx.act(replay(eventId)) }
        : { type: 'button', disabled: true, title: 'Enable the receiver first' },
      label,
    );
  return h(
    'section',
    { class: 'dead-letters' },
    letters.length
      ? h(
          'p',
          {},
          replayButton('Replay all', null),
          enabled
            ? null
            : h(
                'span',
                { class: 'meta' },
                ' The receiver is disabled: enable it first (Enable, above); its catch-up then sends the latest state of every record it missed, and Replay skips the letters it superseded.',
              ),
        )
      : null,
    table(
      [
        ['Event', (l) => h('a', { href: `#/events/${l.eventId}` }, l.eventId)],
        ['Type', (l) => eventTypeLabel(l.eventType)],
        ['Attempts', (l) => String(l.attempts)],
        ['Last error', (l) => (l.lastError ? setAsideLabel(l.lastError) : NONE)],
        ['Last attempt', (l) => when(l.lastAttemptAt)],
        ['Dead since', (l) => when(l.deadSince)],
        ['Actions', (l) => replayButton('Replay', l.eventId)],
      ],
      letters,
      'No dead letters.',
    ),
  );
}
