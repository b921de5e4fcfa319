// The scaling rows of the read-path benchmark (docs/contract.md, "Caching" and "Rate limits"): GET one answered 304
// against 200, GET one with rate limits on against off, and two service processes against one.
import { createClient } from './http-client.ts';
import { compareSideBySide, compareUnderLoad, type LoadResult, runLoad } from './load.ts';
import type { ServerUnderTest } from './servers.ts';

type Options = { connections: number; durationS: number; warmupS: number; rounds: number };
export type Pair = { service: LoadResult; baseline: LoadResult };
export type ScalingFigures = {
  notModified: Pair;
  limitsOn: Pair;
  noiseFloor: Pair;
  twoProcesses: { one: number; two: number };
};

/** The ETag of each record, fetched once: the 304 run sends each back in If-None-Match. */
async function etagsOf(service: ServerUnderTest, auth: Record<string, string>, ids: string[]): Promise<string[]> {
  const client = createClient(service.url, auth);
  try {
    const tags: string[] = [];
    for (const id of ids) tags.push((await client.get(`/v1/learning-opportunities/${id}`)).headers.etag as string);
    return tags;
  } finally {
    client.close();
  }
}

export async function measureScaling(
  servers: { off: ServerUnderTest; on: ServerUnderTest; second: ServerUnderTest },
  auth: Record<string, string>,
  ids: string[],
  options: Options,
  log: (line: string) => void,
): Promise<ScalingFigures> {
  const sample = ids.slice(0, 2000);
  const tags = await etagsOf(servers.off, auth, sample);
  let n = 0;
  const plain = () => `/v1/learning-opportunities/${sample[n++ % sample.length]}`;
  const conditional = () => {
    const i = n++ % sample.length;
    return { path: `/v1/learning-opportunities/${sample[i]}`, headers: { 'if-none-match': tags[i]! } };
  };
  const target = (s: ServerUnderTest, name: string, nextPath?: typeof conditional) => ({
    name,
    url: s.url,
    pid: s.pid,
    headers: auth,
    ...(nextPath ? { nextPath } : {}),
  });

  log(`GET one: 304 (If-None-Match with the record's ETag) vs 200, spread over ${sample.length} ids`);
  const cond = await compareUnderLoad(
    [target(servers.off, '200'), target(servers.off, '304', conditional)],
    plain,
    options,
    log,
  );
  // The limits-on and second processes have served nothing yet, while the first has run every
  // comparison so far: a full run each first, or their first round measures the JIT warming up
  // (in earlier runs, 20-40% more CPU per request in round 1 than in the rounds after).
  log(`warming the limits-on and second processes (${options.durationS} s each)`);
  for (const cold of [servers.on, servers.second])
    await runLoad({
      connections: options.connections,
      durationS: options.durationS,
      headers: auth,
      nextPath: plain,
      url: cold.url,
    });
  // Side by side: the limiter's cost (about 1% of a request's CPU in a profile) is far below this
  // machine's swings between two runs, which decided the back-to-back comparison either way.
  // Against the second limits-off process, not the first: those two were started and warmed
  // together, while the first has served every comparison so far, and a process that has run
  // longer costs less CPU per request (the noise-floor row below shows it: second vs first).
  log(
    'GET one: rate limits on (RATE_LIMIT_PER_MINUTE, a key never over its limit) vs off (a process started with it), side by side (half the connections each)',
  );
  const limits = await compareSideBySide(
    [target(servers.second, 'off'), target(servers.on, 'on')],
    plain,
    options,
    log,
  );
  log(
    'GET one: two identical services (limits off; the first has run longer) side by side: the noise floor of the row above',
  );
  const same = await compareSideBySide(
    [target(servers.off, 'first'), target(servers.second, 'second')],
    plain,
    options,
    log,
  );

  log('GET one: two service processes (half the connections each) vs one');
  const half = {
    connections: Math.max(1, Math.floor(options.connections / 2)),
    durationS: options.durationS,
    headers: auth,
    nextPath: plain,
  };
  const one = await runLoad({ ...half, connections: options.connections, url: servers.off.url });
  const both = await Promise.all([
    runLoad({ ...half, url: servers.off.url }),
    runLoad({ ...half, url: servers.second.url }),
  ]);
  const two = both[0].rps + both[1].rps;
  log(`  one process ${one.rps.toFixed(0)} req/s, two processes ${two.toFixed(0)} req/s`);
  return {
    notModified: { service: cond.get('304')!, baseline: cond.get('200')! },
    limitsOn: { service: limits.get('on')!, baseline: limits.get('off')! },
    noiseFloor: { service: same.get('second')!, baseline: same.get('first')! },
    twoProcesses: { one: one.rps, two },
  };
}
