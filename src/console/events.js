// Events (scope graphql:read): recent stored events newest first, filtered by type and resource, and
// one event with its delivery body and its attempts, per receiver.
import { gql } from './api.js';
import { add, h, missingScope, NONE, put, table, when } from './dom.js';
import { EVENT_TYPES, eventTypeLabel } from './labels.js';
import { outcomeCell, statusCell } from './attempts.js';

const filter = { type: '', resourceId: '' };

export async function renderEvents(main, ctx) {
  put(main, h('h2', {}, 'Events'));
  if (!ctx.scopes.includes('graphql:read')) return add(main, missingScope('graphql:read', 'see events'));
  const typeSelect = h(
    'select',
    { id: 'event-type', name: 'type' },
    h('option', { value: '' }, 'All catalog events'),
    Object.entries(EVENT_TYPES).map(([t, label]) => h('option', { value: t, selected: t === filter.type }, label)),
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
  add(main, form);
  let events;
  try {
    ({ webhookEvents: events } = await gql(
      'query($type: EventType, $resourceId: ID) { webhookEvents(type: $type, resourceId: $resourceId, limit: 50) { id type resourceId occurredAt inFeed } }',
      { type: filter.type || null, resourceId: filter.resourceId || null },
    ));
  } catch (error) {
    // A bad filter (a resource that is no id) is said under the form, which stays to correct it.
    if (error.code !== 'BAD_USER_INPUT') throw error;
    return add(main, h('p', { class: 'error', role: 'alert' }, error.message));
  }
  add(
    main,
    table(
      [
        ['Time', (e) => when(e.occurredAt)],
        ['Type', (e) => typeText(e)],
        ['Resource', (e) => e.resourceId],
        ['Event', (e) => h('a', { href: `#/events/${e.id}` }, e.id)],
      ],
      events,
      'No events match.',
    ),
  );
}

const NOT_IN_FEED = 'for receivers only, not in the change feed';
/** Its type, and for one stored for receivers only that it is not a change in the feed. */
const typeText = (e) => (e.inFeed ? eventTypeLabel(e.type) : `${eventTypeLabel(e.type)} (${NOT_IN_FEED})`);

export async function renderEvent(main, ctx, id) {
  put(main, h('p', {}, h('a', { href: '#/events' }, '← Events')), h('h2', {}, `Event ${id}`));
  if (!ctx.scopes.includes('graphql:read')) return add(main, missingScope('graphql:read', 'see events'));
  // Receivers by their URL where the key may see them (receivers:manage, in the same request), else by id.
  const { event, webhookReceivers } = await gql(
    `query($id: ID!) { event(id: $id) { id type occurredAt resourceId inFeed body
       attempts(limit: 100) { receiverId attempt startedAt outcome statusCode error durationMs responseExcerpt } }
       ${ctx.scopes.includes('receivers:manage') ? 'webhookReceivers { id url }' : ''} }`,
    { id },
  );
  if (!event) return add(main, h('p', {}, 'No such event (pruned, or never stored).'));
  const urls = new Map((webhookReceivers ?? []).map((r) => [r.id, r.url]));
  const byReceiver = new Map();
  for (const a of event.attempts) byReceiver.set(a.receiverId, [...(byReceiver.get(a.receiverId) ?? []), a]);
  add(
    main,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Type'),
      h('dd', {}, typeText(event)),
      h('dt', {}, 'Occurred'),
      h('dd', {}, when(event.occurredAt)),
      h('dt', {}, 'Resource'),
      h('dd', {}, h('code', {}, event.resourceId)),
    ),
    h('h3', {}, 'Body'),
    // Long lines wrap (console.css): no horizontal scrolling through a record's description.
    h('pre', { class: 'body' }, JSON.stringify(JSON.parse(event.body), null, 2)),
    h('h3', {}, 'Attempts per receiver'),
  );
  if (byReceiver.size === 0) add(main, h('p', { class: 'empty' }, 'No attempts.'));
  for (const [receiverId, attempts] of byReceiver) {
    add(
      main,
      h('h4', {}, h('a', { href: `#/receivers/${receiverId}` }, `Receiver ${urls.get(receiverId) ?? receiverId}`)),
      table(
        [
          ['Attempt', (a) => String(a.attempt)],
          ['Time', (a) => when(a.startedAt)],
          ['Outcome', outcomeCell],
          ['Status', statusCell],
          ['Duration', (a) => `${a.durationMs} ms`],
          ['Response', (a) => (a.responseExcerpt ? h('code', {}, a.responseExcerpt) : NONE)],
        ],
        attempts,
      ),
    );
  }
}
