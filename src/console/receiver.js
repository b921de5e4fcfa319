// One receiver's page: its settings and progress (view, rate cap, last catch-up, last resync) with "Resync"
// (receivers:manage: resyncWebhookReceiver, as `receivers resync`; its progress is shown while it is
// queued), its attempts newest first, paged and filterable by outcome (scope graphql:read), and its
// dead letters with "Replay" per letter and "Replay all" (receivers:manage).
import { gql } from './api.js';
import { h, missingScope, table, time } from './dom.js';
import { status, viewCell } from './receivers.js';

const PAGE = 20;
const PROGRESS = 'total queued pending startedAt';
const RECEIVER = `query($id: ID!) { webhookReceiver(id: $id) { id url enabled disabledReason maxPerSecond view
  catchUp { ${PROGRESS} } resync { ${PROGRESS} skipped since } } }`;
/** How often the resync's progress is read while resyncWebhookReceiver runs. */
const PROGRESS_EVERY_MS = 500;
const OUTCOMES = ['SUCCESS', 'HTTP_ERROR', 'TIMEOUT', 'CONNECTION_ERROR', 'REDIRECT', 'THROTTLED', 'WORKER_LOST'];
const ATTEMPTS = `query($id: ID!, $outcome: DeliveryOutcome, $limit: Int, $offset: Int) {
  deliveryAttempts(receiverId: $id, outcome: $outcome, limit: $limit, offset: $offset) {
    id eventId eventType attempt startedAt durationMs statusCode error responseExcerpt outcome deadLettered } }`;

// Kept while the page is shown: the filter and page survive a refresh after an action.
const view = { id: null, outcome: '', offset: 0 };

export async function renderReceiver(main, ctx, id) {
  if (view.id !== id) Object.assign(view, { id, outcome: '', offset: 0 });
  const manage = ctx.scopes.includes('receivers:manage');
  const read = ctx.scopes.includes('graphql:read');
  const receiver = manage ? (await gql(RECEIVER, { id })).webhookReceiver : null;
  main.replaceChildren(
    h('p', {}, h('a', { href: '#/receivers' }, '← Receivers')),
    h('h2', {}, `Receiver ${receiver ? receiver.url : id}`),
    receiver ? h('p', {}, `${status(receiver)} · id ${id}`) : null,
    h('p', {}, h('button', { type: 'button', onclick: () => ctx.refresh() }, 'Refresh')),
    receiver ? settingsSection(ctx, receiver) : null,
  );
  main.append(
    h('h3', {}, 'Attempts'),
    read ? await attemptsSection(ctx, id) : missingScope('graphql:read', 'see delivery attempts'),
  );
  main.append(
    h('h3', {}, 'Dead letters'),
    manage ? await deadLettersSection(ctx, id) : missingScope('receivers:manage', 'see and replay dead letters'),
  );
}

const records = (n) => `${n} record${n === 1 ? '' : 's'}`;

/** A catch-up's or resync's progress in one line. */
function progressText(p) {
  const skipped = p.skipped ? `, ${p.skipped} skipped (no event of a subscribed type)` : '';
  return `${records(p.total)}, ${p.queued} queued, ${p.pending} pending${skipped} (started ${time(p.startedAt)})`;
}

/** View, rate cap, last catch-up and last resync, and "Resync". */
function settingsSection(ctx, receiver) {
  const progress = h('p', { id: 'resync-progress', class: 'progress', role: 'status' });
  const since = h('input', {
    id: 'resync-since',
    type: 'text',
    placeholder: '2026-12-01T09:00:00Z',
    size: 26,
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const resync = async () => {
    const from = since.value.trim() || null;
    const what = from ? `every record changed since ${from}` : 'every published record';
    if (!confirm(`Resync ${receiver.url}? It gets the latest state of ${what} again, each once.`)) return null;
    // The mutation returns once every record is queued; meanwhile its progress is read and shown.
    let done = false;
    const poll = (async () => {
      while (!done) {
        await new Promise((resolve) => window.setTimeout(resolve, PROGRESS_EVERY_MS));
        if (done) break;
        const read = await gql(
          `query($id: ID!) { webhookReceiver(id: $id) { resync { ${PROGRESS} skipped since } } }`,
          { id: receiver.id },
        ).catch(() => null);
        const r = read?.webhookReceiver?.resync;
        if (!done && r && r.startedAt) progress.textContent = `Resync being queued: ${progressText(r)}`;
      }
    })();
    progress.textContent = `Resync of ${what}: finding the records…`;
    try {
      const { resyncWebhookReceiver: r } = await gql(
        `mutation($id: ID!, $since: DateTime) { resyncWebhookReceiver(id: $id, since: $since) { id resync { ${PROGRESS} skipped since } } }`,
        { id: receiver.id, since: from },
      );
      return {
        message: `Resync of ${receiver.url} queued: ${progressText(r.resync)}. Each record goes once, in its latest state, in order with its live changes; Refresh shows what is still pending.`,
      };
    } finally {
      done = true;
      await poll;
    }
  };
  return h(
    'section',
    { class: 'settings' },
    h(
      'dl',
      {},
      h('dt', {}, 'View'),
      h('dd', { id: 'view' }, viewCell(receiver)),
      h('dt', {}, 'Rate cap'),
      h(
        'dd',
        { id: 'rate-cap' },
        receiver.maxPerSecond === null
          ? 'none'
          : `at most ${receiver.maxPerSecond} deliveries per second, across every worker`,
      ),
      h('dt', {}, 'Last catch-up (on enable)'),
      h('dd', { id: 'catch-up' }, receiver.catchUp ? progressText(receiver.catchUp) : 'none'),
      h('dt', {}, 'Last resync'),
      h(
        'dd',
        { id: 'resync' },
        receiver.resync
          ? `${receiver.resync.since ? `changed since ${time(receiver.resync.since)}` : 'every published record'}: ${progressText(receiver.resync)}`
          : 'none',
      ),
    ),
    h(
      'p',
      { class: 'resync' },
      h('label', { for: 'resync-since' }, 'Since (optional) '),
      since,
      ' ',
      h('button', { type: 'button', disabled: !receiver.enabled, onclick: () => ctx.act(resync) }, 'Resync'),
      receiver.enabled ? null : ' (enable it first: enabling sends it what it missed)',
    ),
    progress,
  );
}

async function attemptsSection(ctx, id) {
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
    OUTCOMES.map((o) => h('option', { value: o, selected: o === view.outcome }, o)),
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
        ['Time', (a) => time(a.startedAt)],
        ['Event', (a) => h('a', { href: `#/events/${a.eventId}` }, a.eventId)],
        ['Type', (a) => a.eventType ?? '–'],
        ['Attempt', (a) => String(a.attempt)],
        [
          'Outcome',
          (a) =>
            h(
              'span',
              { class: `outcome ${a.outcome.toLowerCase()}` },
              a.outcome + (a.deadLettered ? ' (dead-lettered)' : ''),
            ),
        ],
        ['Status', (a) => (a.statusCode === null ? (a.error ?? '–') : String(a.statusCode))],
        ['Duration', (a) => `${a.durationMs} ms`],
        ['Response', (a) => h('code', {}, a.responseExcerpt ?? '')],
      ],
      rows.slice(0, PAGE),
      view.offset === 0 ? 'No attempts yet.' : 'No more attempts.',
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

async function deadLettersSection(ctx, id) {
  const { webhookDeadLetters: letters } = await gql(
    `query($id: ID!) { webhookDeadLetters(receiverId: $id) { eventId eventType attempts lastError lastAttemptAt deadSince } }`,
    { id },
  );
  const replay = (eventId) => async () => {
    const { replayWebhookDeadLetters: r } = await gql(
      'mutation($id: ID!, $eventId: ID) { replayWebhookDeadLetters(receiverId: $id, eventId: $eventId) { replayed superseded remaining } }',
      { id, eventId },
    );
    const plural = (n) => `${n} dead letter${n === 1 ? '' : 's'}`;
    // A superseded letter would regress the receiver (its record has a newer delivery to it): skipped, and said so.
    const skipped = `${plural(r.superseded)} skipped as superseded (their record has a newer delivery to this receiver; \`deliveries replay-dead --include-superseded\` sends them anyway)`;
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
        ['Type', (l) => l.eventType ?? '–'],
        ['Attempts', (l) => String(l.attempts)],
        ['Last error', (l) => l.lastError ?? '–'],
        ['Last attempt', (l) => time(l.lastAttemptAt)],
        ['Dead since', (l) => time(l.deadSince)],
        ['', (l) => h('button', { type: 'button', onclick: () => ctx.act(replay(l.eventId)) }, 'Replay')],
      ],
      letters,
      'No dead letters.',
    ),
  );
}
