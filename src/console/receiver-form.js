// "Add receiver" on the receivers page (scope receivers:manage): createWebhookReceiver with the URL, the
// signature scheme, the event types (none ticked = every type), the delivery mode, the view (the list's
// filter syntax; empty = every record), a rate cap and the signing secret. Without a secret given, a
// Standard Webhooks receiver gets one the service generates (returned once by the mutation), a Service
// v1 receiver one the console generates as "Rotate secret" does (32 random bytes, base64url): either is
// shown once in the notice, which goes on the next navigation. The console adds no unsigned receiver
// (the CLI's `receivers add --unsigned` does). The service checks every field: what it refuses
// (BAD_USER_INPUT, invalidParams naming the field) is said under that field and in a line under the
// form, and the form keeps what was typed.
import { ApiError, gql, newSecret } from './api.js';
import { add, h, put } from './dom.js';
import {
  DELIVERY_MODE_HINTS,
  DELIVERY_MODES,
  SIGNATURE_SCHEME_HINTS,
  SIGNATURE_SCHEMES,
  SUBSCRIBABLE_TYPES,
  eventTypeLabel,
} from './labels.js';

const CREATE = `mutation($input: CreateWebhookReceiverInput!) {
  createWebhookReceiver(input: $input) { id url secret signatureScheme } }`;

/** The form's fields, by the names the service's invalidParams use (`type`: one of the types). */
const FIELDS = {
  url: 'URL',
  signatureScheme: 'Signature scheme',
  types: 'Event types',
  deliveryMode: 'Delivery mode',
  view: 'View',
  maxPerSecond: 'Rate cap',
  secret: 'Signing secret',
};
const ALIASES = { type: 'types', mode: 'deliveryMode', scheme: 'signatureScheme' };
/** The field an invalidParams name is about ("input.url", "types[0]" and "type" included), or null. */
function fieldOf(name) {
  const bare = String(name ?? '')
    .replace(/^input\./, '')
    .split(/[.[]/)[0];
  const field = ALIASES[bare] ?? bare;
  return field in FIELDS ? field : null;
}

const id = (field) => `add-${field}`;

/** A labelled control with its hint and its error line (both read out with it: aria-describedby). */
function field(name, control, hint) {
  control.setAttribute('aria-describedby', `${id(name)}-hint ${id(name)}-error`);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id(name) }, FIELDS[name]),
    control,
    h('p', { class: 'hint', id: `${id(name)}-hint` }, hint),
    h('p', { class: 'field-error', id: `${id(name)}-error` }),
  );
}

/** A group of radio buttons or checkboxes under a legend, with its hint and its error line. */
function group(name, type, options, hint) {
  return h(
    'fieldset',
    { id: id(name), class: 'field', 'aria-describedby': `${id(name)}-hint ${id(name)}-error` },
    h('legend', {}, FIELDS[name]),
    options.map(([value, label, title, checked], i) =>
      h(
        'label',
        { class: 'choice', title },
        h('input', { type, name, value, id: `${id(name)}-${i}`, checked }),
        ` ${label}`,
      ),
    ),
    h('p', { class: 'hint', id: `${id(name)}-hint` }, hint),
    h('p', { class: 'field-error', id: `${id(name)}-error` }),
  );
}

const text = (name, attrs = {}) =>
  h('input', { id: id(name), name, type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });

function controls() {
  return [
    field('url', text('url', { size: 50, inputmode: 'url', placeholder: 'https://example.org/webhooks' }), [
      'Where deliveries are POSTed: an absolute http(s) URL.',
    ]),
    group(
      'signatureScheme',
      'radio',
      Object.entries(SIGNATURE_SCHEMES).map(([v, l]) => [v, l, SIGNATURE_SCHEME_HINTS[v], v === 'SERVICE_V1']),
      'How each delivery is signed.',
    ),
    group(
      'types',
      'checkbox',
      SUBSCRIBABLE_TYPES.map((t) => [t, eventTypeLabel(t), null, false]),
      'None ticked: every type.',
    ),
    group(
      'deliveryMode',
      'radio',
      Object.entries(DELIVERY_MODES).map(([v, l]) => [v, l, DELIVERY_MODE_HINTS[v], v === 'ALL_EVENTS']),
      'Latest state: only the newest waiting event of a record is sent.',
    ),
    field('view', text('view', { size: 40, placeholder: 'format=IN_PERSON&country=DE' }), [
      'Only records in this view, in the list’s filter syntax (format, language, topic, provider, country, city). Empty: every record.',
    ]),
    field('maxPerSecond', text('maxPerSecond', { size: 8, inputmode: 'numeric', placeholder: 'no cap' }), [
      'At most this many deliveries per second (1 to 10,000), across every worker. Empty: no cap.',
    ]),
    field('secret', text('secret', { size: 50, class: 'masked' }), [
      'Empty: one is generated (Standard Webhooks: by the service, whsec_…) and shown once.',
    ]),
  ];
}

/** The form's values as CreateWebhookReceiverInput, and the secret the console generated for it (or null). */
function readInput(form) {
  const value = (name) => form.elements.namedItem(name).value.trim();
  const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
  const signatureScheme = checked('signatureScheme')[0] ?? 'SERVICE_V1';
  const rate = value('maxPerSecond');
  const given = value('secret');
  const generated = given === '' && signatureScheme === 'SERVICE_V1' ? newSecret() : null;
  return {
    input: {
      url: value('url'),
      signatureScheme,
      types: checked('types'),
      deliveryMode: checked('deliveryMode')[0] ?? 'ALL_EVENTS',
      view: value('view') || null,
      maxPerSecond: rate === '' ? null : /^\d+$/.test(rate) ? Number(rate) : rate,
      secret: given || generated,
    },
    generated,
  };
}

/** Says under each field what the service refused, and in one line under the form; focuses the first. */
function showErrors(form, summary, error) {
  const params = error.invalidParams?.length ? error.invalidParams : [{ name: null, reason: error.message }];
  const lines = params.map((p) => {
    const name = fieldOf(p.name);
    if (name) {
      // Every reason about the field under it (a view can be wrong in two places), not only the last.
      const line = form.querySelector(`#${id(name)}-error`);
      line.textContent = line.textContent ? `${line.textContent}; ${p.reason}` : p.reason;
      form.querySelector(`#${id(name)}`).setAttribute('aria-invalid', 'true');
    }
    return name ? `${FIELDS[name]}: ${p.reason}` : p.name ? `${p.name}: ${p.reason}` : p.reason;
  });
  put(summary, `The receiver was not added. ${lines.join('; ')}`);
  const first = params.map((p) => fieldOf(p.name)).find(Boolean);
  if (first) form.querySelector(`#${id(first)}`).focus();
}

function clearErrors(form, summary) {
  for (const line of form.querySelectorAll('.field-error')) line.textContent = '';
  for (const invalid of form.querySelectorAll('[aria-invalid]')) invalid.removeAttribute('aria-invalid');
  put(summary);
}

/** The "Add receiver" form, in a disclosure ("Add a receiver"), open when `open`. */
export function addReceiverForm(ctx, { open }) {
  const summary = h('p', { class: 'error form-errors', role: 'alert', id: 'add-errors' });
  const submit = h('button', { type: 'submit' }, 'Add receiver');
  const form = h('form', { class: 'add-receiver', novalidate: true, 'aria-label': 'Add receiver' });
  add(form, controls(), h('p', { class: 'form-actions' }, submit), summary);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form, summary);
    const { input, generated } = readInput(form);
    submit.disabled = true;
    submit.textContent = 'Adding…';
    let created;
    try {
      ({ createWebhookReceiver: created } = await gql(CREATE, { input }));
    } catch (error) {
      submit.disabled = false;
      submit.textContent = 'Add receiver';
      if (error instanceof ApiError && error.code === 'BAD_USER_INPUT') return showErrors(form, summary, error);
      return ctx.fail(error);
    }
    const secret = created.secret ?? generated;
    ctx.say(
      secret
        ? `Added ${created.url}. Its signing secret, shown once (copy it to the receiver now; it goes when you leave this page):`
        : `Added ${created.url}; its deliveries are signed with the secret you gave.`,
      { secret },
    );
    await ctx.refresh();
  });
  return h(
    'details',
    { class: 'add-receiver', open },
    h('summary', {}, 'Add a receiver'),
    h('p', {}, 'A new receiver gets the events from now on (its page offers "Resync" for what came before).'),
    form,
  );
}
