// An HTTP proxy in front of the test API that stops answering at a chosen request: the client is
// then provably in the middle of its work (waiting for that answer), the moment a test kills or
// interrupts it.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type StallingProxy = { url: string; stalled: () => boolean; close: () => Promise<void> };

/** Forwards GET requests to `target`; request number `stallAt` (1-based) matching `counts` gets no answer. */
export async function startStallingProxy(
  target: string,
  counts: (path: string) => boolean,
  stallAt: number,
): Promise<StallingProxy> {
  let seen = 0;
  let held: ServerResponse | null = null;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (counts(new URL(path, target).pathname) && ++seen === stallAt) return void (held = res);
    fetch(new URL(path, target), { headers: { authorization: req.headers.authorization ?? '' } }).then(
      async (answer) =>
        res
          .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
          .end(Buffer.from(await answer.arrayBuffer())),
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stalled: () => held !== null,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
