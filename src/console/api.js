// The console's one way to the service: POST /graphql with the signed-in key (sessionStorage of
// this tab only: never a cookie, a URL or localStorage). Errors carry the service's code and message
// (FORBIDDEN names the scope that is missing).

const STORAGE_KEY = 'lods.console.apiKey';
// What GraphiQL keeps (its tabs: typed queries and variables, a rotated secret among them) is kept
// under this prefix in the same sessionStorage (graphiql-page.js), and goes with the key on sign out.
export const GRAPHIQL_PREFIX = 'lods.graphiql:';

/** Removes every item of `storage` whose key starts with `prefix`. */
export function removeItemsStartingWith(storage, prefix) {
  const keys = [];
  for (let i = 0; i < storage.length; i++) if (storage.key(i)?.startsWith(prefix)) keys.push(storage.key(i));
  for (const key of keys) storage.removeItem(key);
}

export const session = {
  key: () => sessionStorage.getItem(STORAGE_KEY),
  signIn: (key) => sessionStorage.setItem(STORAGE_KEY, key),
  signOut: () => {
    sessionStorage.removeItem(STORAGE_KEY);
    removeItemsStartingWith(sessionStorage, GRAPHIQL_PREFIX);
  },
};

export class ApiError extends Error {
  /** `invalidParams`: a BAD_USER_INPUT's [{ name, reason }], naming the field refused. */
  constructor(message, code, status, invalidParams = []) {
    super(message);
    this.code = code;
    this.status = status;
    this.invalidParams = invalidParams;
  }
}

export async function gql(query, variables = {}) {
  const key = session.key();
  if (!key) throw new ApiError('Not signed in', 'UNAUTHENTICATED', 401);
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(`The service answered ${res.status}`, 'HTTP_ERROR', res.status);
  }
  const error = body.errors?.[0];
  if (error)
    throw new ApiError(error.message, error.extensions?.code ?? 'ERROR', res.status, error.extensions?.invalidParams);
  // problem+json (413, 415, 429, 503 ...): its detail says what is wrong.
  if (!res.ok) throw new ApiError(body.detail ?? `The service answered ${res.status}`, 'HTTP_ERROR', res.status);
  return body.data;
}

/** A key of 32 random bytes, base64url (43 characters): what "Rotate secret" sets. */
export function newSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}
