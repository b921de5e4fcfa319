// The receivers page (scope receivers:manage): every receiver with its view and its health (enabled or
// why not, last success and failure, waiting and dead deliveries, 24 h success chart), its actions,
// and the "Add receiver" form (receiver-form.js). Receivers and their history are two queries of one
// request (the history is one statement for every receiver).
import { gql, newSecret } from './api.js';
import { successChart, successText } from './chart.js';
import { actionButton, add, h, missingScope, plural, put, table, when } from './dom.js';
import { deliveryModeLabel, signatureSchemeLabel, statusLabel } from './labels.js';
import { addReceiverForm } from './receiver-form.js';

const FIELDS =
  'id url enabled disabledReason pausedUntil view deliveryMode signatureScheme previousSecretExpiresAt lastSuccessAt lastFailureAt waitingDeliveries deadDeliveries';

async function loadReceivers() {
  return await gql(
    `{ webhookReceivers { ${FIELDS} } webhookDeliveryHistory { receiverId hours { hour attempts successes } } }`,
  );
}

/** A receiver's view (its canonical text, as text: never markup), or "every record" without one. */
export const viewCell = (r) => (r.view === null ? 'every record' : h('code', { class: 'view' }, r.view));

export async function renderReceivers(main, ctx) {
  put(main, h('h2', {}, 'Receivers'));
  if (!ctx.scopes.includes('receivers:manage'))
    return add(main, missingScope('receivers:manage', 'see and manage receivers'));
  const data = await loadReceivers();
  const history = new Map(data.webhookDeliveryHistory.map((r) => [r.receiverId, r.hours]));
  const act = (label, run) => actionButton(ctx, label, run);
  const columns = [
    [
      'Receiver',
      (r) => [
        h('a', { href: `#/receivers/${r.id}`, class: 'receiver-url' }, r.url),
        h(
          'span',
          { class: 'meta' },
          `${signatureSchemeLabel(r.signatureScheme)} · ${deliveryModeLabel(r.deliveryMode)}`,
        ),
      ],
    ],
    ['Status', statusLabel],
    ['View', viewCell],
    [
      'Last success / failure',
      (r) => [
        h('span', { class: 'last ok' }, h('span', { class: 'tag' }, 'Success'), ' ', when(r.lastSuccessAt)),
        h('span', { class: 'last fail' }, h('span', { class: 'tag' }, 'Failure'), ' ', when(r.lastFailureAt)),
      ],
    ],
    ['Waiting', (r) => String(r.waitingDeliveries)],
    ['Dead', (r) => String(r.deadDeliveries)],
    [
      'Success rate (24 h)',
      (r) =>
        h('span', { class: 'rate' }, successChart(history.get(r.id) ?? []), ' ', successText(history.get(r.id) ?? [])),
    ],
    [
      'Actions',
      (r) =>
        h(
          'span',
          { class: 'actions' },
          r.enabled ? act('Disable', () => disable(r)) : act('Enable', () => enable(r)),
          // A receiver that asked to be left alone (429/503 Retry-After): the operator may end that.
          r.enabled && r.pausedUntil ? act('End pause', () => endPause(r)) : null,
          act('Rotate secret', () => rotate(r)),
          act('Send test event', () => sendTest(r)),
        ),
    ],
  ];
  add(
    main,
    h('p', {}, h('button', { type: 'button', onclick: () => ctx.refresh() }, 'Refresh')),
    table(
      columns,
      data.webhookReceivers,
      'No receivers yet: add one with the form below (or `npm run cli -- receivers add --url URL`, or the GraphQL mutation createWebhookReceiver).',
    ),
    addReceiverForm(ctx, { open: data.webhookReceivers.length === 0 }),
  );
}

/** "Disable" (receivers page and receiver page): its waiting deliveries become dead letters, said with their number. */
export async function disable(r) {
  if (!confirm(`Disable ${r.url}? Its waiting deliveries become dead letters (replayable after Enable).`)) return null;
  const { disableWebhookReceiver: disabled } = await gql(
    'mutation($id: ID!) { disableWebhookReceiver(id: $id) { id deadDeliveries } }',
    { id: r.id },
  );
  return {
    message: `Disabled ${r.url}. Its waiting deliveries are set aside as dead letters (it has ${plural(disabled.deadDeliveries, 'dead letter')}); Enable sends it the latest state of every record that changes meanwhile.`,
  };
}

/** "Enable" (receivers page and receiver page): says the catch-up it queued. */
export async function enable(r) {
  const { enableWebhookReceiver: enabled } = await gql(
    'mutation($id: ID!) { enableWebhookReceiver(id: $id) { id deadDeliveries catchUp { total pending } } }',
    { id: r.id },
  );
  const total = enabled.catchUp?.total ?? 0;
  const caughtUp = total
    ? `Catch-up: the ${plural(total, 'record')} it missed (changed while it was disabled, or never delivered) queued for it, each once in its latest state, before anything newer of the same record (${enabled.catchUp.pending} not delivered yet).`
    : 'It missed no record while it was disabled.';
  const dead = enabled.deadDeliveries
    ? ` Its ${plural(enabled.deadDeliveries, 'dead letter')} ${enabled.deadDeliveries === 1 ? 'stays' : 'stay'} on its page; Replay skips those the catch-up superseded.`
    : '';
  return { message: `Enabled ${r.url}. ${caughtUp}${dead}` };
}

/** "End pause": a receiver that answered 429/503 with Retry-After gets its deliveries now. */
export async function endPause(r) {
  if (!confirm(`${r.url} asked to be left alone until ${r.pausedUntil}. Send its deliveries now?`)) return null;
  await gql('mutation($id: ID!) { enableWebhookReceiver(id: $id) { id } }', { id: r.id });
  return { message: `Ended the pause of ${r.url}: its deferred deliveries start now.` };
}

async function rotate(r) {
  // A Standard Webhooks receiver: the service generates its whsec_ secret and signs with both the
  // new and the old one for 24 h (the default grace), so the receiver can switch at any moment.
  if (r.signatureScheme === 'STANDARD_WEBHOOKS') {
    if (
      !confirm(
        `Rotate the signing secret of ${r.url}? For 24 hours every delivery carries signatures with the new and the old secret.` +
          (r.previousSecretExpiresAt
            ? " The secret before the old one, still signing during the last rotation's grace, stops signing now."
            : ''),
      )
    )
      return null;
    const { rotateWebhookReceiverSecret: rotated } = await gql(
      'mutation($id: ID!) { rotateWebhookReceiverSecret(id: $id, graceHours: 24) { id secret } }',
      { id: r.id },
    );
    return {
      message: `New signing secret of ${r.url}, shown once (the old one keeps working for 24 hours):`,
      secret: rotated.secret,
    };
  }
  // A Service v1 delivery carries one signature: from the next attempt on it verifies only with the
  // new secret, which this click makes, so the receiver cannot accept it beforehand. Say so, and
  // where the rotation without failures is (docs/receivers.md, "Receiver management").
  if (
    !confirm(
      `Rotate the signing secret of ${r.url}? A Service v1 receiver checks one signature: deliveries are signed with the new secret from the next attempt on, and fail (and are retried) until the receiver has it. To rotate without failures, give the receiver the new secret first while it still accepts the old one (the receiver kit: WEBHOOK_SECRET=<new>, WEBHOOK_SECRET_PREVIOUS=<old>), then apply it with \`receivers rotate-secret ID --secret-file F\`.`,
    )
  )
    return null;
  const secret = newSecret();
  await gql('mutation($id: ID!, $secret: String!) { rotateWebhookReceiverSecret(id: $id, secret: $secret) { id } }', {
    id: r.id,
    secret,
  });
  return { message: `New signing secret of ${r.url}, shown once (copy it to the receiver now):`, secret };
}

async function sendTest(r) {
  const { sendTestWebhookEvent: sent } = await gql(
    'mutation($id: ID!) { sendTestWebhookEvent(receiverId: $id) { eventId } }',
    { id: r.id },
  );
  return { message: `Test event ${sent.eventId} queued for ${r.url}; its attempt appears on the receiver's page.` };
}
