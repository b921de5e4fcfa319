// Events (scope graphql:read): recent stored events newest first, filtered by type and resource, and
// one event with its delivery body and its attempts, per receiver.
import { gql } from './api.js';
import { h, missingScope, table, time } from './dom.js';

const TYPES = [
  'LEARNING_OPPORTUNITY_PUBLISHED',
  'LEARNING_OPPORTUNITY_UPDATED',
  'LEARNING_OPPORTUNITY_ARCHIVED',
  'LEARNING_OPPORTUNITY_DELETED',
  'LEARNING_OPPORTUNITY_LEFT_VIEW',
  'WEBHOOK_TEST',
];
const filter = { type: '', resourceId: '' };

export async function renderEvents(main, ctx) {
  main.replaceChildren(h('h2', {}, 'Events'));
  if (!ctx.scopes.includes('graphql:read')) return main.append(missingScope('graphql:read', 'see events'));
  const typeSelect = h(
    'select',
    { id: 'event-type', name: 'type' },
    h('option', { value: '' }, 'All catalog events'),
    TYPES.map((t) => h('option', { value: t, selected: t === filter.type }, t)),
  );
  const resourceInput = h('input', {
    id: 'event-resource',
    name: 'resource',
    value: filter.resourceId,
    placeholder: 'learning opportunity id',
    size: 38,
  });
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e) => {
        e.preventDefault();
        filter.type = typeSelect.value;
        filter.resourceId = resourceInput.value.trim();
        ctx.refresh();
      },
    },
    h('label', { for: 'event-type' }, 'Type '),
    typeSelect,
    ' ',
    h('label', { for: 'event-resource' }, 'Resource '),
    resourceInput,
    ' ',
    h('button', { type: 'submit' }, 'Apply'),
  );
  main.append(form);
  let events;
  try {
    ({ webhookEvents: events } = await gql(
      'query($type: EventType, $resourceId: ID) { webhookEvents(type: $type, resourceId: $resourceId, limit: 50) { id type resourceId occurredAt } }',
      { type: filter.type || null, resourceId: filter.resourceId || null },
    ));
  } catch (error) {
    // A bad filter (a resource that is no id) is said under the form, which stays to correct it.
    if (error.code !== 'BAD_USER_INPUT') throw error;
    return main.append(h('p', { class: 'error', role: 'alert' }, error.message));
  }
  main.append(
    table(
      [
        ['Time', (e) => time(e.occurredAt)],
        ['Type', (e) => e.type],
        ['Resource', (e) => e.resourceId],
        ['Event', (e) => h('a', { href: `#/events/${e.id}` }, e.id)],
      ],
      events,
      'No events match.',
    ),
  );
}

export async function renderEvent(main, ctx, id) {
  main.replaceChildren(h('p', {}, h('a', { href: '#/events' }, '← Events')), h('h2', {}, `Event ${id}`));
  if (!ctx.scopes.includes('graphql:read')) return main.append(missingScope('graphql:read', 'see events'));
  const { event } = await gql(
    `query($id: ID!) { event(id: $id) { id type occurredAt resourceId body
       attempts(limit: 100) { receiverId attempt startedAt outcome statusCode error durationMs responseExcerpt } } }`,
    { id },
  );
  if (!event) return main.append(h('p', {}, 'No such event (pruned, or never stored).'));
  const byReceiver = new Map();
  for (const a of event.attempts) byReceiver.set(a.receiverId, [...(byReceiver.get(a.receiverId) ?? []), a]);
  main.append(
    h('p', {}, `${event.type} · ${time(event.occurredAt)} · resource ${event.resourceId}`),
    h('h3', {}, 'Body'),
    h('pre', { class: 'body' }, JSON.stringify(JSON.parse(event.body), null, 2)),
    h('h3', {}, 'Attempts per receiver'),
  );
  if (byReceiver.size === 0) main.append(h('p', { class: 'empty' }, 'No attempts.'));
  for (const [receiverId, attempts] of byReceiver) {
    main.append(
      h('h4', {}, h('a', { href: `#/receivers/${receiverId}` }, `Receiver ${receiverId}`)),
      table(
        [
          ['Attempt', (a) => String(a.attempt)],
          ['Time', (a) => time(a.startedAt)],
          ['Outcome', (a) => a.outcome],
          ['Status', (a) => (a.statusCode === null ? (a.error ?? '–') : String(a.statusCode))],
          ['Duration', (a) => `${a.durationMs} ms`],
          ['Response', (a) => h('code', {}, a.responseExcerpt ?? '')],
        ],
        attempts,
      ),
    );
  }
}
