// GraphiQL (the `graphiql` package, served from node_modules with React 18) over POST /graphql with
// the key signed in on /console (sessionStorage of this tab): the key goes in the fetcher's
// Authorization header, never into GraphiQL's header editor (which it may persist) or a URL.
// React, ReactDOM and GraphiQL are the globals of the UMD scripts that graphql.html loads first.
// GraphiQL keeps its tabs (typed queries and variables, where a rotated secret may be) in this tab's
// sessionStorage under GRAPHIQL_PREFIX, never in localStorage: they go on Sign out or with the tab.
import { GRAPHIQL_PREFIX, removeItemsStartingWith, session } from './api.js';

// What GraphiQL's default storage left in localStorage before (its keys start with "graphiql:").
removeItemsStartingWith(localStorage, 'graphiql:');

/** GraphiQL's Storage, on sessionStorage under our prefix. */
const tabStorage = {
  getItem: (name) => sessionStorage.getItem(GRAPHIQL_PREFIX + name),
  setItem: (name, value) => sessionStorage.setItem(GRAPHIQL_PREFIX + name, value),
  removeItem: (name) => sessionStorage.removeItem(GRAPHIQL_PREFIX + name),
  clear: () => removeItemsStartingWith(sessionStorage, GRAPHIQL_PREFIX),
  get length() {
    let n = 0;
    for (let i = 0; i < sessionStorage.length; i++) if (sessionStorage.key(i)?.startsWith(GRAPHIQL_PREFIX)) n++;
    return n;
  },
};

const DEFAULT_QUERY = `# The signed-in key's scopes; Ctrl-Enter runs the query.
{
  currentApiKey {
    scopes
  }
}
`;

const root = document.getElementById('graphiql');
const key = session.key();
if (!key) {
  const link = document.createElement('a');
  link.href = '/console';
  link.textContent = 'Sign in on the console';
  const p = document.createElement('p');
  p.className = 'signed-out';
  p.append('No API key is signed in in this tab. ', link, ', then come back here.');
  root.replaceChildren(p);
} else {
  const post = async (params) => {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(params),
    });
    return await res.json();
  };
  const { data } = await post({ query: '{ currentApiKey { scopes } }' });
  const mayIntrospect = data?.currentApiKey?.scopes.includes('graphql:read') ?? false;
  // Introspection needs graphql:read: without it GraphiQL's schema request is answered here with the
  // reason, instead of a 403 from the service (the documented operations still run).
  const fetcher = async (params) =>
    params.operationName === 'IntrospectionQuery' && !mayIntrospect
      ? {
          errors: [
            {
              message:
                'The schema docs need the graphql:read scope, which this API key does not have; the operations of schema/*.graphql still run.',
            },
          ],
        }
      : await post(params);
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultQuery: DEFAULT_QUERY,
      shouldPersistHeaders: false,
      storage: tabStorage,
    }),
  );
}
