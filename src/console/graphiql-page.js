// GraphiQL (the `graphiql` package, served from node_modules with React 18) over POST /graphql with
// the key signed in on /console (sessionStorage of this tab): the key goes in the fetcher's
// Authorization header, never into GraphiQL's header editor (which it may persist) or a URL.
// React, ReactDOM and GraphiQL are the globals of the UMD scripts that graphql.html loads first.
import { session } from './api.js';

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
  const fetcher = async (params) => {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(params),
    });
    return await res.json();
  };
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, { fetcher, defaultQuery: DEFAULT_QUERY, shouldPersistHeaders: false }));
}
