// The console's one way to the service: POST /graphql with the signed-in key (sessionStorage of
// this tab only: never a cookie, a URL or localStorage). Errors carry the service's code and message
// (FORBIDDEN names the scope that is missing).

const STORAGE_KEY = 'lods.console.apiKey';

export const session = {
  key: () => sessionStorage.getItem(STORAGE_KEY),
  signIn: (key) => sessionStorage.setItem(STORAGE_KEY, key),
  signOut: () => sessionStorage.removeItem(STORAGE_KEY),
};

export class ApiError extends Error {
  constructor(message, code, status) {
    super(message);
    this.code = code;
    this.status = status;
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
  if (error) throw new ApiError(error.message, error.extensions?.code ?? 'ERROR', res.status);
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
