// A receiver's attempts (scope graphql:read) on its page: newest first, 20 a page, filterable by
// outcome (every DeliveryOutcome of the schema, labels.js), and the cells an attempt shows there and
// on an event's page.
import { gql } from './api.js';
import { h, NONE, table, when } from './dom.js';
import { OUTCOME_HINTS, OUTCOMES, eventTypeLabel, outcomeLabel } from './labels.js';

const PAGE = 20;
const ATTEMPTS = `query($id: ID!, $outcome: DeliveryOutcome, $limit: Int, $offset: Int) {
  deliveryAttempts(receiverId: $id, outcome: $outcome, limit: $limit, offset: $offset) {
    id eventId eventType attempt startedAt durationMs statusCode error responseExcerpt outcome deadLettered } }`;

/** An attempt's outcome, coloured by kind (console.css), its meaning as the hover title. */
export const outcomeCell = (a) =>
  h(
    'span',
    { class: `outcome ${a.outcome.toLowerCase()}`, title: OUTCOME_HINTS[a.outcome] },
    outcomeLabel(a.outcome) + (a.deadLettered ? ' (dead-lettered)' : ''),
  );

/** The receiver's status code, else the error class (timeout, ECONNREFUSED, ...), else a dash. */
export const statusCell = (a) => (a.statusCode === null ? (a.error ?? NONE) : String(a.statusCode));

// Kept while the page is shown: the filter and page survive a refresh after an action.
const view = { id: null, outcome: '', offset: 0 };

export async function attemptsSection(ctx, id) {
  if (view.id !== id) Object.assign(view, { id, outcome: '', offset: 0 });
  const { deliveryAttempts: rows } = await gql(ATTEMPTS, {
    id,
    outcome: view.outcome || null,
    limit: PAGE + 1,
    offset: view.offset,
  });
  const more = rows.length > PAGE;
  const filter = h(
    'select',
    {
      id: 'outcome-filter',
      onchange: (e) => {
        view.outcome = e.target.value;
        view.offset = 0;
        ctx.refresh();
      },
    },
    h('option', { value: '' }, 'All outcomes'),
    Object.entries(OUTCOMES).map(([o, label]) => h('option', { value: o, selected: o === view.outcome }, label)),
  );
  const move = (label, offset, enabled) =>
    h(
      'button',
      {
        type: 'button',
        disabled: !enabled,
        onclick: () => {
          view.offset = offset;
          ctx.refresh();
        },
      },
      label,
    );
  return h(
    'section',
    { class: 'attempts' },
    h('p', {}, h('label', { for: 'outcome-filter' }, 'Outcome '), filter),
    table(
      [
        ['Time', (a) => when(a.startedAt)],
        ['Event', (a) => h('a', { href: `#/events/${a.eventId}` }, a.eventId)],
        ['Type', (a) => eventTypeLabel(a.eventType)],
        ['Attempt', (a) => String(a.attempt)],
        ['Outcome', outcomeCell],
        ['Status', statusCell],
        ['Duration', (a) => `${a.durationMs} ms`],
        ['Response', (a) => (a.responseExcerpt ? h('code', {}, a.responseExcerpt) : NONE)],
      ],
      rows.slice(0, PAGE),
      view.offset === 0 ? (view.outcome ? 'No attempts with this outcome.' : 'No attempts yet.') : 'No more attempts.',
    ),
    h(
      'p',
      { class: 'pager' },
      move('Newer', Math.max(0, view.offset - PAGE), view.offset > 0),
      ` attempts ${view.offset + 1}–${view.offset + Math.min(rows.length, PAGE)} `,
      move('Older', view.offset + PAGE, more),
    ),
  );
}
