// The nightly consumer: a sequential walk of the whole list at limit=100, and the latency of the
// first page against the last one (deep OFFSET).
import { type Client, createClient, median } from './http-client.ts';

export const WALK_LIMIT = 100;
const pagePath = (offset: number) => `/v1/learning-opportunities?limit=${WALK_LIMIT}&offset=${offset}`;

export type WalkResult = { pages: number; records: number; bytes: number; totalMs: number };
export type PageLatency = { firstMs: number; lastMs: number; lastOffset: number };

/** Walks until offset + page size reaches totalCount, as docs/contract.md ("REST v1") tells a client to. */
export async function fullWalk(baseUrl: string, headers: Record<string, string>): Promise<WalkResult> {
  const client = createClient(baseUrl, headers);
  try {
    const started = performance.now();
    let offset = 0;
    let total = Infinity;
    let pages = 0;
    let records = 0;
    let bytes = 0;
    while (offset < total) {
      const page = await client.get(pagePath(offset));
      if (page.status !== 200) throw new Error(`walk: GET ${pagePath(offset)} answered ${page.status}`);
      // Only the tail is parsed (cheaply): pagination sits after the results.
      const tail = /"pagination":\{"totalCount":(\d+),/.exec(page.body.subarray(-200).toString('latin1'));
      if (!tail) throw new Error('walk: no pagination.totalCount in the page');
      total = Number(tail[1]);
      pages++;
      bytes += page.body.length;
      records += Math.min(WALK_LIMIT, total - offset);
      offset += WALK_LIMIT;
    }
    return { pages, records, bytes, totalMs: performance.now() - started };
  } finally {
    client.close();
  }
}

/** Median latency of the first and the last page, sampled alternately after one warm-up each. */
export async function firstVersusLastPage(
  baseUrl: string,
  headers: Record<string, string>,
  records: number,
  samples: number,
): Promise<PageLatency> {
  const client: Client = createClient(baseUrl, headers);
  const lastOffset = Math.floor((records - 1) / WALK_LIMIT) * WALK_LIMIT;
  try {
    const first: number[] = [];
    const last: number[] = [];
    for (let i = -1; i < samples; i++) {
      const a = await client.get(pagePath(0));
      const b = await client.get(pagePath(lastOffset));
      if (a.status !== 200 || b.status !== 200) throw new Error(`first/last page answered ${a.status}/${b.status}`);
      if (i < 0) continue; // warm-up
      first.push(a.ms);
      last.push(b.ms);
    }
    return { firstMs: median(first), lastMs: median(last), lastOffset };
  } finally {
    client.close();
  }
}
