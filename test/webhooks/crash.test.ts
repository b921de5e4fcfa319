// At-least-once across a crash: a worker process killed with SIGKILL in the middle of a delivery
// loses nothing. Once a worker runs again, the interrupted job expires and is handed out again, and
// every event arrives.
import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { spawnChild } from '../support/child-processes.ts';

function startWorkerProcess(): Promise<ChildProcess> {
  const child = spawnChild(process.execPath, ['src/app/main.ts', '--role', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: testDb().url,
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_BACKOFF_BASE_MS: '100',
      WEBHOOK_BACKOFF_MAX_MS: '1000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${output}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('delivery worker running')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`worker exited with ${code}:\n${output}`)));
  });
}
const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

describe('webhook delivery across a worker crash', function () {
  this.timeout(90_000);
  let receiver: TestReceiver;
  let worker: ChildProcess | null = null;
  // Registered before the stack's own: the child worker is killed before the stack stops.
  after(() => {
    if (worker && worker.exitCode === null) worker.kill('SIGKILL');
  });
  // This process only writes (API + fan-out); deliveries are the child worker's job.
  const stack = useWebhookStack({ worker: false, supervise: false, config: { timeoutMs: 1000 } });

  before(async () => {
    receiver = await startReceiver();
    // The very first request is held open: the worker gets killed while waiting for it.
    receiver.reply((_, index) => (index === 0 ? { hang: true } : { status: 200 }));
    await stack.addReceiver(receiver.url);
  });
  after(async () => {
    await receiver.close();
  });

  async function publish(): Promise<string> {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    return (await testDb().pool.query<{ id: string }>('select id from event where resource_id = $1', [input.id]))
      .rows[0]!.id;
  }

  it('delivers every event after the worker is killed with SIGKILL mid-delivery and started again', async () => {
    worker = await startWorkerProcess();
    const events = [await publish(), await publish(), await publish()];
    const [held] = await receiver.waitFor(1, 10_000);
    worker.kill('SIGKILL');
    expect(await exited(worker)).to.equal(null); // killed by the signal, no exit code
    events.push(await publish(), await publish()); // while no worker runs

    worker = await startWorkerProcess();
    const answered = () => new Set(receiver.requests.slice(1).map((r) => String(r.headers['x-service-event-id'])));
    await eventually(async () => events.every((id) => answered().has(id)), 30_000, 'every event answered 2xx');
    // The interrupted delivery was sent again: at least once, with the same event id.
    expect(
      receiver.requests.filter((r) => r.headers['x-service-event-id'] === held!.headers['x-service-event-id']).length,
    ).to.be.at.least(2);
    // ... and the attempt cut short by the kill is in the attempt log.
    const { rows } = await testDb().pool.query('select outcome from delivery_attempt where event_id = $1', [
      held!.headers['x-service-event-id'],
    ]);
    expect(rows.map((r) => r.outcome)).to.include('worker_lost');

    worker.kill('SIGTERM');
    expect(await exited(worker), 'a clean exit after SIGTERM').to.equal(0);
  });
});
