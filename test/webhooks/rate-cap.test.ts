// A receiver's rate cap (receiver.max_per_second): at most that many of its deliveries start in any
// one-second window, across every worker and process, measured here at real receivers from the
// requests' arrival times; a receiver without a cap beside it drains at full speed, and its deliveries
// cost nothing more (no token take). Throttled jobs wait without counting as failures. Also: the take
// statement's arithmetic, the setting through the CLI and GraphQL, LATEST_STATE under a cap, and the
// cost of the cap per delivery (worker and database CPU, capped and uncapped rounds alternated).
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { rateCapTakes } from '../../src/kernel/metrics.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { takeSendTokens } from '../../src/webhooks/receivers/rate-cap.ts';
import { addReceiver, disableReceiver, getReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, graphql, silentLogger } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type RoleProcess, startRoleProcess } from '../support/role-process.ts';
import {
  deliveryState,
  eventually,
  resetWebhooks,
  startWebhookStack,
  TEST_SECRET_KEY,
  testSecrets,
  testWebhookConfig,
  useWebhookStack,
  type WebhookStack,
} from '../support/webhooks.ts';
import { drained } from './convergence-support.ts';

const manage = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });

/** A receiver on 127.0.0.1 that answers 200 at once and keeps each request's arrival time and body. */
type TimedReceiver = { url: string; arrivals: number[]; bodies: string[]; close: () => Promise<void> };
async function startTimedReceiver(): Promise<TimedReceiver> {
  const arrivals: number[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    // Stamped when the request's head is parsed: the moment a window is about.
    arrivals.push(performance.timeOrigin + performance.now());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    arrivals,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The most arrivals in any window [t, t + windowMs) starting at an arrival (sliding). */
function busiestWindow(arrivals: readonly number[], windowMs = 1000): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

/** One take statement: when it was sent and when it returned (this machine's clock, which the database shares), and what it granted. */
type Take = { sent: number; returned: number; granted: number };

/**
 * The most tokens granted inside any one-second window for certain: a take's grant happened on the
 * database's clock somewhere between its sending and its return, so only takes wholly inside a window
 * are counted in it (a loaded machine's late returns cannot crowd a window that the database kept).
 */
function busiestCertainWindow(takes: readonly Take[], windowMs = 1000): number {
  const sorted = [...takes].sort((a, b) => a.sent - b.sent);
  let most = 0;
  for (let i = 0; i < sorted.length; i++) {
    let inside = 0;
    for (let j = i; j < sorted.length && sorted[j]!.sent < sorted[i]!.sent + windowMs; j++)
      if (sorted[j]!.returned < sorted[i]!.sent + windowMs) inside += sorted[j]!.granted;
    most = Math.max(most, inside);
  }
  return most;
}

/** `count` new records published in batches of 500 (one event each, fanned out to every enabled receiver). */
async function publish(stack: WebhookStack, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  for (let i = 0; i < ids.length; i += 500) {
    const batch = ids.slice(i, i + 500);
    await stack.api.writes.upsertMany(
      batch.map((id) => parseLearningOpportunityInput(buildLearningOpportunityInput({ id }))),
    );
    await stack.api.writes.publishMany(batch);
  }
  return ids;
}

const takes = async (result: string) =>
  (await rateCapTakes.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
const allTakes = async () => (await takes('granted')) + (await takes('denied')) + (await takes('uncapped'));

describe('rate cap: the take statement (one account per receiver, on the database clock)', () => {
  before(() => resetWebhooks());

  it('grants the burst at once, then one token per interval; says when the next is due; null without a cap', async () => {
    const slow = await addReceiver(manage(), { url: 'http://127.0.0.1:9/a', maxPerSecond: 1 });
    expect(slow.maxPerSecond).to.equal(1);
    // 1/s: T = (1 s + 20 ms + 10 ms) / 1 = 1,030 ms, a tolerance of 20 ms: a burst of 1, then the next
    // 1,010 ms later (far beyond a round trip of the test's, even on a loaded machine).
    expect(await takeSendTokens(testDb().pool, slow.id, 5)).to.deep.include({ granted: 1 });
    const refused = (await takeSendTokens(testDb().pool, slow.id, 5))!;
    expect(refused.granted).to.equal(0);
    expect(refused.waitMs).to.be.within(500, 1010);
    await new Promise((resolve) => setTimeout(resolve, refused.waitMs + 5));
    expect((await takeSendTokens(testDb().pool, slow.id, 5))!.granted).to.equal(1);
    // 20/s: T = 51.5 ms, the same tolerance.
    const twenty = await addReceiver(manage(), { url: 'http://127.0.0.1:9/t', maxPerSecond: 20 });
    expect(await takeSendTokens(testDb().pool, twenty.id, 5)).to.deep.include({ granted: 1 });
    const paced = await testDb().pool.query<{ interval_us: string; tolerance_us: string }>(
      'select interval_us::text, tolerance_us::text from receiver_pace where receiver_id = $1',
      [twenty.id],
    );
    expect(paced.rows[0]).to.deep.equal({ interval_us: '51500', tolerance_us: '20000' });

    // 1000/s: T = 1030 µs, a burst of floor(20 ms / T) + 1 = 20.
    const fast = await addReceiver(manage(), { url: 'http://127.0.0.1:9/b', maxPerSecond: 1000 });
    expect((await takeSendTokens(testDb().pool, fast.id, 50))!.granted).to.equal(20);
    const { rows } = await testDb().pool.query<{ interval_us: string; tolerance_us: string }>(
      'select interval_us::text, tolerance_us::text from receiver_pace where receiver_id = $1',
      [fast.id],
    );
    expect(rows[0]).to.deep.equal({ interval_us: '1030', tolerance_us: '20000' });

    const none = await addReceiver(manage(), { url: 'http://127.0.0.1:9/c' });
    expect(none.maxPerSecond).to.equal(null);
    expect(await takeSendTokens(testDb().pool, none.id, 1)).to.equal(null);
    await updateReceiver(manage(), slow.id, { maxPerSecond: null });
    expect(await takeSendTokens(testDb().pool, slow.id, 1)).to.equal(null);
  });

  it('never grants more than the cap in any one-second window, whatever the asks (1, 7, 150 and 10000 per second)', async () => {
    for (const cap of [1, 7, 150, 10_000]) {
      const { id } = await addReceiver(manage(), { url: `http://127.0.0.1:9/${cap}`, maxPerSecond: cap });
      // Asks of 1 to 8 as fast as one connection goes, for 1.5 s.
      const takes: Take[] = [];
      const started = Date.now();
      let ask = 0;
      while (Date.now() - started < 1500) {
        const wanted = (ask++ % 8) + 1;
        const sent = performance.now();
        const t = (await takeSendTokens(testDb().pool, id, wanted))!;
        takes.push({ sent, returned: performance.now(), granted: t.granted });
      }
      expect(busiestCertainWindow(takes), `cap ${cap}`).to.be.at.most(cap);
      // And it does not starve: at least three quarters of a second's worth in the 1.5 s (a loaded
      // machine's slow round trips leave asks unmade: 206 of 225 was seen in a full parallel run on
      // PostgreSQL 15, 179 at the busy start of one on the embedded server).
      const granted = takes.reduce((n, t) => n + t.granted, 0);
      if (cap <= 150) expect(granted, `cap ${cap}: granted in 1.5 s`).to.be.at.least(Math.ceil(cap * 0.75));
    }
  });
});

/** A receiver's attempts by outcome. */
async function outcomes(receiverId: string): Promise<Record<string, number>> {
  const { rows } = await testDb().pool.query<{ outcome: string; n: number }>(
    'select outcome, count(*)::int as n from delivery_attempt where receiver_id = $1 group by outcome',
    [receiverId],
  );
  return Object.fromEntries(rows.map((r) => [r.outcome, r.n]));
}

describe('rate cap: deliveries to real receivers, by real workers', function () {
  this.timeout(120_000);
  let stack: WebhookStack | null = null;
  const receivers: TimedReceiver[] = [];
  const timedReceiver = async () => {
    const r = await startTimedReceiver();
    receivers.push(r);
    return r;
  };

  beforeEach(() => resetWebhooks());
  afterEach(async () => {
    await stack?.stop();
    stack = null;
    for (const r of receivers.splice(0)) await r.close();
  });

  it('a receiver capped at 20/s never gets more than 20 in any second, counted as no failure; one without a cap beside it drains at full speed', async () => {
    stack = await startWebhookStack();
    const [slow, fast] = [await timedReceiver(), await timedReceiver()];
    const capped = await addReceiver(manage(), { url: slow.url, maxPerSecond: 20 });
    const free = await addReceiver(manage(), { url: fast.url });
    const [granted, denied] = [await takes('granted'), await takes('denied')];
    await publish(stack, 120);
    await eventually(async () => fast.arrivals.length >= 120, 30_000, 'the uncapped receiver drained');
    await eventually(async () => slow.arrivals.length >= 120, 30_000, 'the capped receiver drained').catch(
      async (error: Error) => {
        throw new Error(`${error.message}: ${slow.arrivals.length} of 120; ${await deliveryState(capped.id)}`);
      },
    );
    await drained(testDb(), 10_000);
    const most = busiestWindow(slow.arrivals);
    const started = Math.min(...slow.arrivals, ...fast.arrivals);
    const took = Math.max(...slow.arrivals) - started;
    const fastTook = Math.max(...fast.arrivals) - started;
    console.log(
      `      capped at 20/s: busiest second ${most}, 120 in ${took.toFixed(0)} ms (${((119 * 1000) / took).toFixed(1)}/s), ${(await takes('granted')) - granted} takes granted and ${(await takes('denied')) - denied} denied; uncapped: all 120 in ${fastTook.toFixed(0)} ms`,
    );
    // The cap holds the sends (rate-cap.ts); arrivals jitter around them: 21 seen when the first
    // request's connection set-up delayed it past the second, 22 in a full CI run (a request held up
    // on a busy machine arrives beside the next second's).
    expect(most, 'the busiest one-second window at the capped receiver').to.be.at.most(22);
    // Held to its rate (97% of the cap: rate-cap.ts), and kept at it: the slack is what a loaded
    // machine adds (8.8 s seen in a full run on a busy machine, against 6.2 s at the cap).
    expect(took, 'the capped receiver took').to.be.within(((120 - 21) / 20) * 1000, ((120 * 1.03) / 20) * 1000 + 5000);
    // Not held up by the capped one: done before that one had three quarters of its deliveries (at
    // its pace, 4.5 s in; held to it, the uncapped one would finish with it, near 6 s).
    const slowMost = [...slow.arrivals].sort((a, b) => a - b)[89]!;
    expect(Math.max(...fast.arrivals), 'the uncapped receiver finished long before').to.be.below(slowMost);
    expect(slow.arrivals.length, 'each delivery once').to.equal(120);
    expect(await outcomes(capped.id), 'waiting for its rate is no failure').to.deep.equal({ success: 120 });
    expect(await outcomes(free.id)).to.deep.equal({ success: 120 });
    expect((await getReceiver(manage(), capped.id))!.lastFailureAt).to.equal(null);
  });

  it('holds across two worker processes on the same database, both sending', async () => {
    stack = await startWebhookStack({ worker: false });
    const slow = await timedReceiver();
    const capped = await addReceiver(manage(), { url: slow.url, maxPerSecond: 20 });
    const env = {
      SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'debug',
      RATE_LIMIT_PER_MINUTE: '0',
    };
    const workers: RoleProcess[] = [await startRoleProcess('worker', env), await startRoleProcess('worker', env)];
    try {
      await publish(stack, 140);
      await eventually(async () => slow.arrivals.length >= 140, 40_000, 'the capped receiver drained').catch(
        async (error: Error) => {
          throw new Error(`${error.message}: ${slow.arrivals.length} of 140; ${await deliveryState(capped.id)}`);
        },
      );
      await drained(testDb(), 10_000);
    } finally {
      for (const w of workers) expect(await w.stop(), 'a clean exit after SIGTERM').to.equal(0);
    }
    // Each worker logs each attempt it made (debug): both sent some.
    const sentBy = workers.map(
      (w) =>
        w
          .output()
          .split('\n')
          .filter((line) => line.includes('"delivery attempt finished"') && line.includes(capped.id)).length,
    );
    const most = busiestWindow(slow.arrivals);
    const took = Math.max(...slow.arrivals) - Math.min(...slow.arrivals);
    console.log(
      `      two workers (${sentBy.join(' + ')} deliveries), capped at 20/s: busiest second ${most}, 140 in ${took.toFixed(0)} ms`,
    );
    // The cap governs when deliveries start: each attempt's start, stamped by the worker that sent it
    // (the two share this machine's clock), at most the cap in any second, one more for the stamps.
    const { rows } = await testDb().pool.query<{ ms: number }>(
      `select (extract(epoch from started_at) * 1000)::float8 as ms from delivery_attempt where receiver_id = $1`,
      [capped.id],
    );
    expect(busiestWindow(rows.map((r) => r.ms)), 'the busiest one-second window of starts').to.be.at.most(21);
    // At the receiver, alone: 20-21. Its arrivals are stamped by this test process's event loop, which
    // other tests' work shares: loaded, it lets requests bunch (23 and 27 seen in full parallel runs of
    // sends whose starts the tokens spaced); far below an uncapped 140 all the same.
    expect(most, 'the busiest one-second window at the receiver').to.be.at.most(30);
    expect(
      sentBy.every((n) => n > 0),
      `deliveries per worker: ${sentBy.join(', ')}`,
    ).to.equal(true);
    expect(sentBy[0]! + sentBy[1]!).to.equal(140);
    expect(await outcomes(capped.id)).to.deep.equal({ success: 140 });
  });

  it('costs a receiver without a cap nothing: no token is taken for it', async () => {
    stack = await startWebhookStack();
    const fast = await timedReceiver();
    const free = await addReceiver(manage(), { url: fast.url });
    const before = await allTakes();
    await publish(stack, 60);
    await eventually(async () => fast.arrivals.length >= 60, 30_000, 'delivered');
    await drained(testDb(), 10_000);
    expect(await allTakes(), 'token takes').to.equal(before);
    expect(await outcomes(free.id)).to.deep.equal({ success: 60 });
    const { rows } = await testDb().pool.query('select 1 from receiver_pace where receiver_id = $1', [free.id]);
    expect(rows).to.have.length(0);
  });

  it('a cap set or removed while deliveries flow applies from the next load', async () => {
    stack = await startWebhookStack();
    const slow = await timedReceiver();
    const receiver = await addReceiver(manage(), { url: slow.url });
    await publish(stack, 20);
    await eventually(async () => slow.arrivals.length >= 20, 30_000, 'uncapped deliveries');
    await updateReceiver(manage(), receiver.id, { maxPerSecond: 5 });
    const from = slow.arrivals.length;
    await publish(stack, 15);
    await eventually(async () => slow.arrivals.length >= from + 15, 30_000, 'capped deliveries');
    expect(busiestWindow(slow.arrivals.slice(from)), 'at 5/s').to.be.at.most(6);
    await updateReceiver(manage(), receiver.id, { maxPerSecond: null });
    const again = slow.arrivals.length;
    const started = performance.timeOrigin + performance.now();
    await publish(stack, 40);
    await eventually(async () => slow.arrivals.length >= again + 40, 30_000, 'uncapped again');
    expect(Math.max(...slow.arrivals.slice(again)) - started, 'no longer held to 5/s').to.be.below(4000);
  });

  it('LATEST_STATE under a cap: fewer, newer deliveries (a newer event replaces a waiting one), the newest last', async () => {
    stack = await startWebhookStack();
    const slow = await timedReceiver();
    const receiver = await addReceiver(manage(), { url: slow.url, mode: 'latest-state', maxPerSecond: 2 });
    const [id] = await publish(stack, 1);
    const writing = performance.now();
    for (let n = 0; n < 30; n++)
      await stack.api.writes.upsert(
        parseLearningOpportunityInput(buildLearningOpportunityInput({ id, title: `Title ${n}` })),
      );
    const wrote = performance.now() - writing;
    await drained(testDb(), 30_000);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const versions = slow.bodies.map((b) => (JSON.parse(b) as { resource: { version: number } }).resource.version);
    const { rows } = await testDb().pool.query<{ version: string }>(
      'select version::text from resource_version where resource_id = $1',
      [id],
    );
    console.log(`      31 events at 2/s, LATEST_STATE: ${versions.length} delivered (versions ${versions.join(', ')})`);
    // One per 515 ms while the writes went on (2/s: T = 1,030 ms / 2), and a few around them; each
    // of the 31 without LATEST_STATE.
    expect(versions.length, `deliveries (the writes took ${wrote.toFixed(0)} ms)`).to.be.at.most(
      Math.ceil(wrote / 515) + 3,
    );
    expect(versions.at(-1), 'the newest last').to.equal(Number(rows[0]!.version));
    expect([...versions].sort((a, b) => a - b)).to.deep.equal(versions);
    const seen = await outcomes(receiver.id);
    expect(seen.success).to.equal(versions.length);
    expect(Object.keys(seen).sort()).to.deep.equal(['success', 'superseded']);
  });
});

describe('rate cap: set through the CLI and GraphQL', function () {
  this.timeout(120_000);
  const stack = useWebhookStack({ worker: false });
  let key: string;
  before(async () => {
    key = await createTestKey(['receivers:manage']);
  });

  it('`receivers add --max-per-second`, `update --max-per-second` / `--no-max-per-second`, shown by `receivers list`', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      'http://127.0.0.1:9/cli',
      '--unsigned',
      '--max-per-second',
      '25',
      '--json',
    );
    expect(added.code, added.stderr).to.equal(0);
    const { id, maxPerSecond } = json<{ id: string; maxPerSecond: number | null }>(added.stdout);
    expect(maxPerSecond).to.equal(25);
    const listed = await cli('receivers', 'list');
    expect(listed.stdout)
      .to.match(/maxPerSecond/)
      .and.match(/25\/s/);
    for (const bad of ['0', '10001', '2.5', 'fast']) {
      const refused = await cli('receivers', 'update', id, '--max-per-second', bad);
      expect(refused.code, `--max-per-second ${bad}`).to.equal(2);
      // Named as the option given, not as the service's input.
      expect(refused.stderr).to.match(
        /^error: --max-per-second: must be a whole number of deliveries per second from 1 to 10,000$/m,
      );
    }
    const changed = await cli('receivers', 'update', id, '--max-per-second', '300');
    expect(changed.code, changed.stderr).to.equal(0);
    expect(changed.stdout).to.match(/at most 300\/s/);
    const kept = json<{ maxPerSecond: number | null }>(
      (await cli('receivers', 'update', id, '--mode', 'latest-state', '--json')).stdout,
    );
    expect(kept.maxPerSecond, 'another change keeps it').to.equal(300);
    const removed = json<{ maxPerSecond: number | null }>(
      (await cli('receivers', 'update', id, '--no-max-per-second', '--json')).stdout,
    );
    expect(removed.maxPerSecond).to.equal(null);
    expect((await cli('receivers', 'list')).stdout).to.match(/none/);
  });

  it('GraphQL: createWebhookReceiver / updateWebhookReceiver take maxPerSecond (null removes it), WebhookReceiver.maxPerSecond shows it', async () => {
    const fields = 'id maxPerSecond';
    const create = await graphql<{ createWebhookReceiver: { id: string; maxPerSecond: number | null } }>(
      stack.api,
      key,
      `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${fields} } }`,
      { input: { url: 'http://127.0.0.1:9/gql', maxPerSecond: 40 } },
    );
    expect(create.body.errors).to.equal(undefined);
    const { id } = create.body.data!.createWebhookReceiver;
    expect(create.body.data!.createWebhookReceiver.maxPerSecond).to.equal(40);
    const update = (input: Record<string, unknown>) =>
      graphql<{ updateWebhookReceiver: { maxPerSecond: number | null } }>(
        stack.api,
        key,
        `mutation($id: ID!, $input: UpdateWebhookReceiverInput!) { updateWebhookReceiver(id: $id, input: $input) { ${fields} } }`,
        { id, input },
      );
    const tooMany = await update({ maxPerSecond: 10_001 });
    expect(tooMany.body.errors![0]!.extensions).to.deep.include({ code: 'BAD_USER_INPUT' });
    expect(
      (tooMany.body.errors![0]!.extensions as { invalidParams: { name: string }[] }).invalidParams[0]!.name,
    ).to.equal('maxPerSecond');
    expect((await update({ url: 'http://127.0.0.1:9/gql2' })).body.data!.updateWebhookReceiver.maxPerSecond).to.equal(
      40,
    );
    expect((await update({ maxPerSecond: 7 })).body.data!.updateWebhookReceiver.maxPerSecond).to.equal(7);
    expect((await update({ maxPerSecond: null })).body.data!.updateWebhookReceiver.maxPerSecond).to.equal(null);
    await disableReceiver(manage(), id);
  });
});

/** CPU (ms) of the test's PostgreSQL server: the postmaster, its children, and those that ended (its cutime). */
async function postgresCpuMs(): Promise<number> {
  const backend = (await testDb().pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const stat = (pid: number | string) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };
  // Fields after "(comm)": [0] state, [1] ppid, ..., [11] utime, [12] stime, [13] cutime, [14] cstime.
  const postmaster = Number(stat(backend)[1]);
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = stat(entry);
      if (Number(entry) === postmaster) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      else if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10; // USER_HZ = 100
}

describe('rate cap: cost per delivery', function () {
  this.timeout(600_000);
  // What it asserts is the number of token takes; the CPU it prints is a hint (2 x 200 each way keeps
  // the suite short; 4 x 500 gave the same takes and steadier CPU figures).
  const ROUNDS = 2;
  const PER_ROUND = 200;

  it(`capped (10000/s, never reached) against uncapped, ${ROUNDS} x ${PER_ROUND} deliveries each, alternated: worker and database CPU per delivery`, async () => {
    const totals = {
      capped: { workerMs: 0, dbMs: 0, wallMs: 0, takes: 0, n: 0, statements: new Map<string, number>() },
      uncapped: { workerMs: 0, dbMs: 0, wallMs: 0, takes: 0, n: 0, statements: new Map<string, number>() },
    };
    // The worker's own pool, counting its statements by name (or first words).
    let counting: Map<string, number> | null = null;
    const pool = testDb().pool;
    const countedPool = new Proxy(pool, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
        return (query: string | { name?: string; text: string }, ...rest: unknown[]) => {
          const label =
            typeof query === 'string' ? query.trim().slice(0, 40) : (query.name ?? query.text.trim().slice(0, 40));
          if (counting) counting.set(label, (counting.get(label) ?? 0) + 1);
          return (target.query as (...args: unknown[]) => unknown).call(target, query, ...rest);
        };
      },
    });
    const stack = await startWebhookStack({ worker: false });
    try {
      for (let round = 0; round < ROUNDS * 2; round++) {
        const mode = round % 2 === 0 ? 'uncapped' : 'capped';
        await resetWebhooks();
        const receiver = await startTimedReceiver();
        try {
          await addReceiver(manage(), { url: receiver.url, maxPerSecond: mode === 'capped' ? 10_000 : null });
          await publish(stack, PER_ROUND);
          const [cpu, db, takesBefore, wall] = [
            process.cpuUsage(),
            await postgresCpuMs(),
            await allTakes(),
            performance.now(),
          ];
          counting = totals[mode].statements;
          const worker = await startDeliveryWorker({
            boss: stack.boss,
            pool: countedPool,
            config: testWebhookConfig(),
            logger: silentLogger,
            secrets: testSecrets,
          });
          await eventually(async () => receiver.arrivals.length >= PER_ROUND, 60_000, 'round drained');
          await drained(testDb(), 30_000, 50);
          const wallMs = performance.now() - wall;
          await worker.stop();
          counting = null;
          const used = process.cpuUsage(cpu);
          const t = totals[mode];
          t.workerMs += (used.user + used.system) / 1000;
          t.dbMs += (await postgresCpuMs()) - db;
          t.wallMs += wallMs;
          t.takes += (await allTakes()) - takesBefore;
          // Deliveries, not requests: at least once, so on a loaded machine a retry after a timed-out
          // attempt arrives twice (401 requests for 400 deliveries, once in a full run).
          t.n += new Set(receiver.bodies).size;
        } finally {
          await receiver.close();
        }
      }
    } finally {
      await stack.stop();
    }
    const statements = (t: (typeof totals)['capped']) =>
      [...t.statements]
        .sort((a, b) => b[1] - a[1])
        .map(([label, n]) => `${label.replace(/\s+/g, ' ')}: ${(n / t.n).toFixed(3)}`)
        .join('; ');
    console.log(
      `      statements per delivery on the worker's pool:\n        uncapped: ${statements(totals.uncapped)}\n        capped:   ${statements(totals.capped)}`,
    );
    const per = (t: (typeof totals)['capped']) => ({
      workerUs: (t.workerMs * 1000) / t.n,
      dbUs: (t.dbMs * 1000) / t.n,
      takes: t.takes / t.n,
      perSecond: (t.n * 1000) / t.wallMs,
    });
    const [c, u] = [per(totals.capped), per(totals.uncapped)];
    console.log(
      `      per delivery, ${totals.uncapped.n} uncapped / ${totals.capped.n} capped (alternated rounds of ${PER_ROUND}):\n` +
        `        uncapped: test process (worker + receiver) ${u.workerUs.toFixed(0)} µs CPU, PostgreSQL ${u.dbUs.toFixed(0)} µs CPU, ${u.takes.toFixed(2)} takes, ${u.perSecond.toFixed(0)} deliveries/s\n` +
        `        capped:   test process (worker + receiver) ${c.workerUs.toFixed(0)} µs CPU, PostgreSQL ${c.dbUs.toFixed(0)} µs CPU, ${c.takes.toFixed(2)} takes, ${c.perSecond.toFixed(0)} deliveries/s\n` +
        `        the cap's cost: ${(c.workerUs - u.workerUs).toFixed(0)} µs worker CPU, ${(c.dbUs - u.dbUs).toFixed(0)} µs PostgreSQL CPU per delivery`,
    );
    expect(u.takes, 'no take for uncapped deliveries').to.equal(0);
    expect(c.takes, 'at most one take per capped delivery').to.be.within(0.01, 1);
    expect(totals.capped.n).to.equal(ROUNDS * PER_ROUND);
    expect(totals.uncapped.n).to.equal(ROUNDS * PER_ROUND);
  });
});
