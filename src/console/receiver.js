// One receiver's page: its settings, health and progress (URL, status, delivery mode, signature, event
// types, view, rate cap, last catch-up, last resync) with "Set rate cap" (updateWebhookReceiver, as
// `receivers update --max-per-second`) and "Resync" (receivers:manage:
// resyncWebhookReceiver, as `receivers resync`; its progress is shown while it is queued), its attempts
// per hour over the last 24 h as a chart (receivers:manage: webhookDeliveryHistory), its attempts newest
// first, paged and filterable by outcome (graphql:read: attempts.js), and its dead letters with
// "Replay" per letter and "Replay all" (receivers:manage: dead-letters.js); "Disable"/"Enable" and
// "End pause" as on the receivers page. A section the key may not
// see says which scope it needs.
import { ApiError, gql } from './api.js';
import { attemptsSection } from './attempts.js';
import { hourlyChart } from './chart.js';
import { deadLettersSection } from './dead-letters.js';
import { actionButton, add, h, missingScope, plural, put, when, whenText } from './dom.js';
import { deliveryModeLabel, eventTypesLabel, signatureSchemeLabel, statusLabel } from './labels.js';
import { disable, enable, endPause, viewCell } from './receivers.js';

const PROGRESS = 'total queued pending startedAt';
const RECEIVER = `query($id: ID!) {
  webhookReceiver(id: $id) { id url enabled disabledReason disabledAt maxPerSecond view deliveryMode signatureScheme
    eventTypes hasSecret previousSecretExpiresAt createdAt lastSuccessAt lastFailureAt pausedUntil waitingDeliveries deadDeliveries
    catchUp { ${PROGRESS} } resync { ${PROGRESS} skipped since } }
  webhookDeliveryHistory(hours: 24) { receiverId hours { hour attempts successes } } }`;
/** How often the resync's progress is read while resyncWebhookReceiver runs. */
const PROGRESS_EVERY_MS = 500;

export async function renderReceiver(main, ctx, id) {
  const manage = ctx.scopes.includes('receivers:manage');
  const read = ctx.scopes.includes('graphql:read');
  const data = manage ? await gql(RECEIVER, { id }) : null;
  const receiver = data?.webhookReceiver ?? null;
  const hours = data?.webhookDeliveryHistory.find((r) => r.receiverId === id)?.hours ?? [];
  put(
    main,
    h('p', {}, h('a', { href: '#/receivers' }, '← Receivers')),
    h('h2', {}, `Receiver ${receiver ? receiver.url : id}`),
    manage
      ? h('p', {}, receiver ? `${statusLabel(receiver)} · id ${id}` : 'No receiver has this id (removed?).')
      : missingScope('receivers:manage', "see this receiver's settings, its 24 h chart and its dead letters"),
    h('p', {}, h('button', { type: 'button', onclick: () => ctx.refresh() }, 'Refresh')),
    receiver ? settingsSection(ctx, receiver) : null,
    receiver ? [h('h3', {}, 'Last 24 hours'), hourlyChart(hours)] : null,
  );
  add(
    main,
    h('h3', {}, 'Attempts'),
    read ? await attemptsSection(ctx, id) : missingScope('graphql:read', 'see delivery attempts'),
  );
  add(
    main,
    h('h3', {}, 'Dead letters'),
    manage && receiver
      ? await deadLettersSection(ctx, receiver)
      : manage
        ? null
        : missingScope('receivers:manage', 'see and replay dead letters'),
  );
}

/** A catch-up's or resync's progress in one line. */
function progressText(p) {
  const skipped = p.skipped ? `, ${p.skipped} skipped (no event of a subscribed type)` : '';
  return `${plural(p.total, 'record')}, ${p.queued} queued, ${p.pending} pending${skipped} (started ${whenText(p.startedAt)})`;
}

/** How its deliveries are signed, and until when a rotated-out secret still signs them. */
function signing(r) {
  const scheme = signatureSchemeLabel(r.signatureScheme);
  if (!r.hasSecret) return `${scheme}, unsigned (no secret: rotate one in)`;
  return r.previousSecretExpiresAt
    ? `${scheme}; the previous secret also signs until ${whenText(r.previousSecretExpiresAt)}`
    : scheme;
}

/** Its settings and health as terms and values, then "Resync". */
function settingsSection(ctx, r) {
  const facts = [
    ['Status', 'status', r.enabled ? 'Enabled' : `${statusLabel(r)} (since ${whenText(r.disabledAt)})`],
    ['Delivery mode', 'delivery-mode', deliveryModeLabel(r.deliveryMode)],
    ['Signature', 'signature', signing(r)],
    ['Event types', 'event-types', eventTypesLabel(r.eventTypes)],
    ['View', 'view', viewCell(r)],
    [
      'Rate cap',
      'rate-cap',
      r.maxPerSecond === null ? 'none' : `at most ${r.maxPerSecond} deliveries per second, across every worker`,
    ],
    ['Last success', 'last-success', when(r.lastSuccessAt)],
    ['Last failure', 'last-failure', when(r.lastFailureAt)],
    [
      'Paused',
      'paused',
      r.pausedUntil
        ? `until ${whenText(r.pausedUntil)}: it answered 429/503 with Retry-After (End pause ends it)`
        : 'no',
    ],
    ['Waiting / dead', 'backlog', `${r.waitingDeliveries} waiting, ${r.deadDeliveries} dead`],
    ['Added', 'created', when(r.createdAt)],
    ['Last catch-up (on enable)', 'catch-up', r.catchUp ? progressText(r.catchUp) : 'none'],
    [
      'Last resync',
      'resync',
      r.resync
        ? `${r.resync.since ? `changed since ${whenText(r.resync.since)}` : 'every published record'}: ${progressText(r.resync)}`
        : 'none',
    ],
  ];
  return h(
    'section',
    { class: 'settings' },
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, id, value]) => [h('dt', {}, term), h('dd', { id }, value)]),
    ),
    stateControls(ctx, r),
    rateCapControls(ctx, r),
    resyncControls(ctx, r),
  );
}

/** Its rate cap changed (updateWebhookReceiver, as `receivers update --max-per-second`); empty: no cap. */
function rateCapControls(ctx, receiver) {
  const cap = h('input', {
    id: 'rate-cap-input',
    type: 'text',
    inputmode: 'numeric',
    size: 8,
    placeholder: 'no cap',
    value: receiver.maxPerSecond === null ? '' : String(receiver.maxPerSecond),
    autocomplete: 'off',
  });
  const save = async () => {
    const text = cap.value.trim();
    if (text !== '' && !/^\d+$/.test(text))
      throw new ApiError(
        'Rate cap: give a whole number of deliveries per second, or nothing for no cap',
        'BAD_USER_INPUT',
        400,
      );
    // The service checks its range, and names maxPerSecond when it is out of it.
    const maxPerSecond = text === '' ? null : Number(text);
    const { updateWebhookReceiver: r } = await gql(
      `mutation($id: ID!, $input: UpdateWebhookReceiverInput!) { updateWebhookReceiver(id: $id, input: $input) { id maxPerSecond } }`,
      { id: receiver.id, input: { maxPerSecond } },
    );
    return {
      message:
        r.maxPerSecond === null
          ? `${receiver.url} has no rate cap now.`
          : `${receiver.url} gets at most ${r.maxPerSecond} deliveries per second now, across every worker (a receiver in latest-state mode gets fewer, newer ones).`,
    };
  };
  return h(
    'p',
    { class: 'rate-cap' },
    h('label', { for: 'rate-cap-input' }, 'Rate cap (deliveries per second) '),
    cap,
    ' ',
    h('button', { type: 'button', onclick: () => ctx.act(save) }, 'Set rate cap'),
  );
}

/** "Disable" or "Enable", and "End pause" while it asked to be left alone: as on the receivers page. */
function stateControls(ctx, r) {
  const act = (label, run) => actionButton(ctx, label, run);
  return h(
    'p',
    { class: 'actions' },
    r.enabled ? act('Disable', () => disable(r)) : act('Enable', () => enable(r)),
    r.enabled && r.pausedUntil ? [' ', act('End pause', () => endPause(r))] : null,
  );
}

/** "Resync", with an optional "since", and its progress while it is queued. */
function resyncControls(ctx, receiver) {
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
  return [
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
  ];
}
