// The abuse of issue 18 item 4 (test/graphql/abuse-limits.test.ts, bench:abuse), as its own process: one catalog:write key sending 1 MiB GraphQL
// documents (named operations of `{ __typename }`, ~220,000 tokens) back to back on two
// connections until killed. Prints a dot per answer. URL and KEY from the environment.
let document = '';
for (let i = 0; document.length < 1024 * 1024; i++) document += `query q${i} { __typename } `;
const body = JSON.stringify({ query: document, operationName: 'q0' });
const headers = { authorization: `Bearer ${process.env.KEY}`, 'content-type': 'application/json' };

async function loop(): Promise<never> {
  for (;;) {
    try {
      const res = await fetch(process.env.URL!, { method: 'POST', headers, body });
      await res.arrayBuffer();
    } catch {
      // a refused connection: try again, as a careless client would
    }
    process.stdout.write('.');
  }
}

process.stdout.write('go\n');
await Promise.all([loop(), loop()]);
