// The console's entry: sign-in (a form with a field labelled "API key"; the key goes to sessionStorage
// only), "Sign out", and the pages by hash route: #/receivers, #/receivers/<id>, #/events,
// #/events/<id>. What is shown follows the key's scopes (currentApiKey); a refused call shows the
// service's own message, which names the missing scope. The notice (what an action did, a secret shown
// once) stays while its page is re-rendered and goes with the next navigation.
import { ApiError, gql, session } from './api.js';
import { h, put } from './dom.js';
import { renderEvent, renderEvents } from './events.js';
import { renderReceiver } from './receiver.js';
import { renderReceivers } from './receivers.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const notice = document.getElementById('notice');
let scopes = null;

function say(message, { secret, error } = {}) {
  put(notice);
  if (!message) return;
  notice.append(
    h(
      'div',
      { class: error ? 'message error' : 'message' },
      h('span', {}, message),
      secret ? h('code', { class: 'secret' }, secret) : null,
      h('button', { type: 'button', class: 'dismiss', onclick: () => notice.replaceChildren() }, 'Dismiss'),
    ),
  );
}

function describe(error) {
  if (error instanceof ApiError && error.code === 'UNAUTHENTICATED')
    return 'The API key was not accepted (missing, unknown or revoked).';
  return error instanceof ApiError ? error.message : `Something went wrong: ${error.message}`;
}

function signInForm(message) {
  nav.hidden = true;
  // No password field: Firefox's password manager offered to save the key as the origin's
  // password on every sign-in, although the form is never submitted. A text field that
  // browsers neither remember (autocomplete off) nor show (console.css masks it).
  const input = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'text',
    class: 'masked',
    autocomplete: 'off',
    spellcheck: 'false',
    autocapitalize: 'off',
    required: true,
    size: 60,
  });
  const form = h(
    'form',
    {
      class: 'sign-in',
      onsubmit: async (e) => {
        e.preventDefault();
        session.signIn(input.value.trim());
        input.value = '';
        await start();
      },
    },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'The key stays in this browser tab (sessionStorage) until you sign out or close the tab.'),
    h('label', { for: 'api-key' }, 'API key'),
    ' ',
    input,
    ' ',
    h('button', { type: 'submit' }, 'Sign in'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
  );
  put(main, form);
  input.focus();
}

function signOut(message) {
  session.signOut();
  scopes = null;
  say(null);
  signInForm(message);
}

/** Says what went wrong in the notice; a key no longer accepted (401) signs out. True when still signed in. */
function fail(error) {
  if (error instanceof ApiError && error.status === 401) {
    signOut(describe(error));
    return false;
  }
  say(describe(error), { error: true });
  return true;
}

const ctx = {
  get scopes() {
    return scopes ?? [];
  },
  refresh: () => route(),
  /** Shows `message` (and a `secret`, once) in the notice, until dismissed or the next navigation. */
  say,
  fail,
  /** Runs an action (a function returning { message, secret } or null when cancelled), says what it did, and reloads the page. */
  act: async (run) => {
    try {
      const result = await run();
      if (result) say(result.message, { secret: result.secret });
    } catch (error) {
      if (!fail(error)) return;
    }
    await route();
    // The button pressed went with the page it was on: focus goes on from what the action said.
    const said = notice.querySelector('.message');
    if (said) {
      said.tabIndex = -1;
      said.focus({ preventScroll: true });
    } else focusHeading();
  },
};

// Each navigation clears the page at once and renders into a container of its own: a render that a
// later navigation overtook (an Apply pressed while the page was loading) goes on into its container,
// no longer in the page, instead of appending a second table to the new one. (Keeping the old page
// up until the new one was ready let clicks land on buttons about to be replaced.)
async function route() {
  if (!scopes) return;
  const view = document.createElement('div');
  main.replaceChildren(view);
  const [, page, id] = (location.hash || '#/').slice(1).split('/');
  try {
    if (page === 'receivers' && id) await renderReceiver(view, ctx, decodeURIComponent(id));
    else if (page === 'events' && id) await renderEvent(view, ctx, decodeURIComponent(id));
    else if (page === 'events' || (!page && !scopes.includes('receivers:manage'))) await renderEvents(view, ctx);
    else await renderReceivers(view, ctx);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signOut(describe(error));
    view.replaceChildren(h('p', { class: 'error', role: 'alert' }, describe(error)));
  }
}

async function start() {
  if (!session.key()) return signInForm();
  try {
    scopes = (await gql('{ currentApiKey { scopes } }')).currentApiKey.scopes;
  } catch (error) {
    return signOut(describe(error));
  }
  nav.hidden = false;
  document.getElementById('who').textContent = `Scopes: ${scopes.join(', ')}`;
  await route();
  focusHeading();
}

/**
 * Keyboard focus to the page's heading after a sign-in or a navigation, so that the keyboard (and a
 * screen reader) goes on from the new page rather than from the top of the document.
 */
function focusHeading() {
  const heading = main.querySelector('h2');
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
}

document.getElementById('sign-out').addEventListener('click', () => signOut());
// Another page: the notice of the last one goes (a secret shown once included).
window.addEventListener('hashchange', async () => {
  say(null);
  await route();
  focusHeading();
});
await start();
