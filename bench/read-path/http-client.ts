// A lean keep-alive HTTP client for the sequential measurements (walks, first/last page): it reads
// the body as bytes and never parses it, so the client costs the same for service and baseline.
import { Agent, type IncomingHttpHeaders, request } from 'node:http';

export type Fetched = { status: number; body: Buffer; ms: number; headers: IncomingHttpHeaders };

export type Client = { get: (path: string) => Promise<Fetched>; close: () => void };

export function createClient(baseUrl: string, headers: Record<string, string> = {}): Client {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const base = new URL(baseUrl);
  return {
    get: (path) =>
      new Promise((resolve, reject) => {
        const started = performance.now();
        const req = request({ agent, host: base.hostname, port: base.port, path, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks),
              ms: performance.now() - started,
              headers: res.headers,
            }),
          );
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
