// 10,000 hostile requests, as a scanner or a fuzzer sends them: every method Node parses, invented
// paths, case and trailing-slash variants of real ones, junk percent-encoding, long paths, random
// request ids, and /graphql bodies that are garbage, not JSON, or queries of invented fields.
import { randomBytes } from 'node:crypto';
import { Agent, METHODS, request } from 'node:http';

const KNOWN = [
  '/v1/learning-opportunities',
  '/v1/openapi.json',
  '/graphql',
  '/metrics',
  '/healthz',
  '/readyz',
  '/problems/not-found',
];
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const noise = (bytes: number) => randomBytes(bytes).toString('hex');
const randomCase = (s: string) => [...s].map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c)).join('');

function fuzzedPath(): string {
  switch (Math.floor(Math.random() * 7)) {
    case 0:
      return `/${noise(8)}`;
    case 1:
      return `/v1/learning-opportunities/${noise(16)}`;
    case 2:
      return randomCase(pick(KNOWN));
    case 3:
      return `${pick(KNOWN)}/`;
    case 4:
      return `/v1/${noise(4)}%${noise(1).slice(0, 1)}z/${noise(4)}`;
    case 5:
      return `/${'a'.repeat(200 + Math.floor(Math.random() * 1800))}`;
    default:
      return `${pick(KNOWN)}?${noise(4)}=${noise(20)}`;
  }
}

function fuzzedGraphqlBody(): string {
  switch (Math.floor(Math.random() * 4)) {
    case 0:
      return noise(64);
    case 1:
      return `{"query": "${noise(8)}`;
    case 2:
      return JSON.stringify({ query: `{ f${noise(6)} { id } }` });
    default:
      return JSON.stringify({
        query: `{ learningOpportunities(limit: ${1 + Math.floor(Math.random() * 100)}) { results { id f${noise(3)} } } }`,
      });
  }
}

export type FuzzResult = { sent: number; failed: number; ms: number };

/** Sends `total` fuzzed requests over `connections` keep-alive connections; `key` authorizes some of them. */
export async function fuzz(baseUrl: string, key: string, total: number, connections: number): Promise<FuzzResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const methods = METHODS.filter((m) => m !== 'CONNECT');
  const started = performance.now();
  let next = 0;
  let failed = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const graphql = Math.random() < 0.25;
      const method = graphql ? 'POST' : pick(methods);
      const headers: Record<string, string> = { 'x-request-id': Math.random() < 0.5 ? noise(8) : `bad id ${noise(4)}` };
      if (Math.random() < 0.5) headers.authorization = `Bearer ${Math.random() < 0.5 ? key : `lods_${noise(20)}`}`;
      if (graphql)
        headers['content-type'] = pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded']);
      const req = request(`${baseUrl}${graphql ? '/graphql' : fuzzedPath()}`, { method, headers, agent }, (res) => {
        res.resume();
        res.once('end', resolve);
        res.once('error', () => resolve());
      });
      req.once('error', () => {
        failed++;
        resolve();
      });
      req.end(graphql ? fuzzedGraphqlBody() : method === 'GET' || method === 'HEAD' ? undefined : noise(16));
    });
  const worker = async () => {
    while (next < total) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  return { sent: total, failed, ms: performance.now() - started };
}
