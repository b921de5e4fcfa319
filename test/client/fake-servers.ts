// Real HTTP servers on 127.0.0.1 that misbehave on purpose, for the client tests: a scripted server
// (answer n is up to the test) and a fake /v1 list whose content the test changes between pages.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LearningOpportunity } from '@lods/client';

export type SeenRequest = { method: string; url: string; authorization: string | undefined };

export type ScriptedServer = {
  url: string;
  /** Every request received, in order. */
  requests: SeenRequest[];
  close: () => Promise<void>;
};

/** `respond(n, req, res)` answers the n-th request (0-based). */
export async function startScriptedServer(
  respond: (n: number, req: IncomingMessage, res: ServerResponse) => void,
): Promise<ScriptedServer> {
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const n = requests.length;
    requests.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
    respond(n, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

export function sendProblem(
  res: ServerResponse,
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): void {
  const body = {
    type: `/problems/${title.toLowerCase().replaceAll(' ', '-')}`,
    title,
    status,
    detail,
    instance: '/v1/learning-opportunities',
  };
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers }).end(JSON.stringify(body));
}

/** Drops the connection without an answer (the client sees a reset / "other side closed"). */
export function resetConnection(req: IncomingMessage): void {
  req.socket.destroy();
}

/**
 * A fake `GET /v1/learning-opportunities`: `listFor(n)` returns the whole ordered list as it stands
 * when the n-th page is requested (the test mutates or swaps it between pages); the server pages
 * it by limit/offset and reports its length as totalCount, unless `totalCountFor` says otherwise.
 */
export async function startFakeCatalog(
  listFor: (n: number) => LearningOpportunity[],
  options: { totalCountFor?: (n: number, list: LearningOpportunity[]) => number } = {},
): Promise<ScriptedServer> {
  return await startScriptedServer((n, req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/v1/learning-opportunities')
      return sendProblem(res, 404, 'Not found', `No resource at ${url.pathname}`);
    const limit = Number(url.searchParams.get('limit') ?? 20);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    // updatedBefore and updatedSince as the service filters them (a keyset walk's pages after the
    // first, and its readings of one instant).
    const before = url.searchParams.get('updatedBefore');
    const since = url.searchParams.get('updatedSince');
    const list = listFor(n).filter(
      (r) =>
        (before === null || Date.parse(r.updatedAt) < Date.parse(before)) &&
        (since === null || Date.parse(r.updatedAt) >= Date.parse(since)),
    );
    const totalCount = options.totalCountFor?.(n, list) ?? list.length;
    sendJson(res, 200, { results: list.slice(offset, offset + limit), pagination: { totalCount, limit, offset } });
  });
}

/** A minimal but complete v1 record. */
export function fakeRecord(id: string, updatedAt: string, title = `Record ${id.slice(-4)}`): LearningOpportunity {
  return {
    id,
    title,
    summary: null,
    description: null,
    url: null,
    provider: null,
    format: 'ONLINE',
    language: 'en',
    topics: [],
    price: null,
    status: 'PUBLISHED',
    publishedAt: '2026-01-01T00:00:00.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt,
    sessions: [],
    deadlines: [],
    faqs: [],
    externalReviews: [],
    accolades: [],
  };
}

/** The v1 list order: updatedAt descending, then id descending. */
export function inListOrder(records: LearningOpportunity[]): LearningOpportunity[] {
  return [...records].sort((a, b) =>
    a.updatedAt === b.updatedAt ? (a.id < b.id ? 1 : -1) : a.updatedAt < b.updatedAt ? 1 : -1,
  );
}
