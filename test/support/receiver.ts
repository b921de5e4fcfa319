// A real webhook receiver on 127.0.0.1 for tests: records every request (raw body bytes, headers,
// arrival time) and answers as told: a status, a redirect, a delay, or not at all (hang).
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceivedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Header names as sent, in order (lower-cased). */
  headerNames: string[];
  body: Buffer;
  /** Date.now() when the request arrived (headers received). */
  arrivedAt: number;
};

export type Reply = {
  status?: number;
  body?: string | Buffer;
  hang?: boolean;
  redirectTo?: string;
  delayMs?: number;
  /** More response headers (`retry-after`, say). */
  headers?: Record<string, string>;
};
export type ReplyRule = Reply | ((request: ReceivedRequest, index: number) => Reply);

export type TestReceiver = {
  url: string;
  requests: ReceivedRequest[];
  /** How to answer from now on (default 200). */
  reply: (rule: ReplyRule) => void;
  /** Resolves once `count` requests have arrived (their bodies read). */
  waitFor: (count: number, timeoutMs?: number) => Promise<ReceivedRequest[]>;
  /** Answers every request held by `hang` with 200. */
  releaseHung: () => void;
  close: () => Promise<void>;
};

export async function startReceiver(path = '/hooks/lods'): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const hung = new Set<ServerResponse>();
  const waiters: { count: number; resolve: () => void }[] = [];
  let rule: ReplyRule = { status: 200 };

  const server = createServer((req, res) => {
    const arrivedAt = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        headerNames: req.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
        body: Buffer.concat(chunks),
        arrivedAt,
      };
      const index = requests.push(received) - 1;
      for (const w of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const reply = typeof rule === 'function' ? rule(received, index) : rule;
      if (reply.hang) {
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      }
      const send = () => {
        if (reply.redirectTo) res.writeHead(reply.status ?? 302, { location: reply.redirectTo }).end();
        else
          res
            .writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers })
            .end(reply.body ?? 'ok');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    reply: (next) => {
      rule = next;
    },
    // Generous: a delivery under a loaded suite (2 cores, 4 test files at once) was seen to take over 5 s.
    waitFor: (count, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        if (requests.length >= count) return resolve(requests.slice(0, count));
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${requests.length} of ${count} requests within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests.slice(0, count));
          },
        });
      }),
    releaseHung: () => {
      for (const res of hung) res.writeHead(200).end('late');
      hung.clear();
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
