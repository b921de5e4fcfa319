// The bare baseline: node:http + pg, no framework, no auth, no validation beyond what routing needs.
// It answers the two /v1 read URLs with the same bytes from the same statements as the service
// (src/catalog/read-model.ts), so the service/baseline ratio is the service's own overhead.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { ONE_SQL, PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, pageBudget, renderPage } from '../../src/catalog/read-model.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const LIST_PATH = '/v1/learning-opportunities';
const ONE_PATH = /^\/v1\/learning-opportunities\/([0-9a-f-]{36})$/;

export type Baseline = { url: string; close: () => Promise<void> };

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export async function startBaseline(databaseUrl: string, poolMax: number): Promise<Baseline> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolMax });

  async function answer(rawUrl: string, res: ServerResponse): Promise<void> {
    const url = new URL(rawUrl, 'http://baseline');
    const one = ONE_PATH.exec(url.pathname);
    if (one) {
      const { rows } = await pool.query<{ doc: string }>({ name: 'one', text: ONE_SQL.public, values: [one[1], null] });
      return rows[0] ? send(res, 200, rows[0].doc) : send(res, 404, '{"status":404}');
    }
    if (url.pathname !== LIST_PATH) return send(res, 404, '{"status":404}');
    const limit = Number(url.searchParams.get('limit') ?? 20);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const { rows } = await pool.query<{ total: string; docs: string; n: number }>({
      name: 'page',
      text: PAGE_SQL.public,
      values: [limit, offset, null, pageBudget(PAGE_MAX_BYTES_DEFAULT)],
    });
    send(
      res,
      200,
      renderPage(
        { totalCount: Number(rows[0]?.total ?? 0), limit, offset, results: rows[0]?.docs ?? '' },
        rows[0]?.n ?? 0,
      ),
    );
  }

  const server = createServer((req, res) => {
    answer(req.url ?? '/', res).catch(() => send(res, 500, '{"status":500}'));
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await pool.end();
    },
  };
}
