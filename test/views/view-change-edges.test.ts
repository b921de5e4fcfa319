// A change of a receiver's view sends what makes its copy equal to the new view: records that come
// in, and LEFT_VIEW for records that go out, also for a record whose delivery is on its way at that
// moment (it was routed by the view before: the receiver gets it, then the LEFT_VIEW), and for one
// that a write committing during the change moves out (routed by the view before, but written after
// the change looked). A record in neither view gets nothing, also when it has no value for a view's
// parameter (no language): for it the old view's rule is neither true nor false but unknown, and
// that counts as out.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { addReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, testSecrets, useWebhookStack } from '../support/webhooks.ts';

type Delivered = { type: string; resource: { id: string; version: number } };

/**
 * Holds back the commit of every transaction that stores an event of record `id` by `seconds` (a
 * deferred trigger sleeping at commit: after the write routed its events). Returns its removal.
 */
async function holdCommits(id: string, seconds: number): Promise<() => Promise<void>> {
  const db = testDb().pool;
  await db.query(
    `create function slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(${seconds}); return null; end $$`,
  );
  await db.query(
    `create constraint trigger slow_commit after insert on event deferrable initially deferred for each row
       when (new.resource_id = '${id}') execute function slow_commit()`,
  );
  return async () => {
    await db.query('drop trigger slow_commit on event');
    await db.query('drop function slow_commit()');
  };
}

describe('a change of view beside deliveries and writes under way, and records without a value for the view', function () {
  this.timeout(60_000);
  const stack = useWebhookStack({ config: { timeoutMs: 10_000 } });
  let receiver: TestReceiver;
  after(() => receiver?.close());

  it('sends LEFT_VIEW after the delivery on its way, and nothing about a record in neither view', async () => {
    receiver = await startReceiver();
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const { id } = await addReceiver(deps, { url: receiver.url, view: 'language=de' });
    const publish = async (overrides: Record<string, unknown>) => {
      const input = buildLearningOpportunityInput(overrides);
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      return input.id;
    };
    receiver.reply({ hang: true });
    const german = await publish({ language: 'de', format: 'IN_PERSON' }); // in the view, then out
    const unset = await publish({ language: null, format: 'IN_PERSON' }); // in neither view
    const online = await publish({ language: 'en', format: 'ONLINE' }); // comes in
    // Of these three records (a catalog other tests left may hold more, restated by the view change too).
    const of = (record: string) =>
      receiver.requests
        .map((r) => JSON.parse(r.body.toString()) as Delivered)
        .filter((e) => e.resource.id === record)
        .map((e) => e.type);
    await eventually(async () => of(german).length === 1, 10_000, 'the German record on its way');

    await updateReceiver(deps, id, { view: 'format=ONLINE' });
    receiver.reply({ status: 200 });
    receiver.releaseHung();
    await eventually(
      async () => of(german).length === 2 && of(online).length === 1,
      10_000,
      'the view change delivered',
    );
    await new Promise((resolve) => setTimeout(resolve, 1000)); // anything more would arrive meanwhile
    expect(of(german)).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED', 'LEARNING_OPPORTUNITY_LEFT_VIEW']);
    expect(of(online)).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED']);
    expect(of(unset)).to.deep.equal([]);
  });

  it('a write committing while the view changes is sent as the new view has it', async () => {
    await receiver.close();
    receiver = await startReceiver();
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const { id } = await addReceiver(deps, { url: receiver.url, view: 'language=de' });
    const input = buildLearningOpportunityInput({ language: 'de', format: 'IN_PERSON' }); // in both views
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await eventually(async () => receiver.requests.length === 1, 10_000, 'the record delivered');

    // The next write of the record commits 1.5 s late: after its events were routed (by the view
    // before), while the view changes.
    const release = await holdCommits(input.id, 1.5);
    try {
      const write = stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, format: 'ONLINE' })); // out of the new view
      await new Promise((resolve) => setTimeout(resolve, 500));
      await updateReceiver(deps, id, { view: 'format=IN_PERSON' });
      await write;
    } finally {
      await release();
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const types = receiver.requests
      .map((r) => JSON.parse(r.body.toString()) as Delivered)
      .filter((e) => e.resource.id === input.id)
      .map((e) => e.type);
    // Its UPDATED (routed by the view before: it stays in that one), then its LEFT_VIEW of the new one.
    expect(types).to.deep.equal([
      'LEARNING_OPPORTUNITY_PUBLISHED',
      'LEARNING_OPPORTUNITY_UPDATED',
      'LEARNING_OPPORTUNITY_LEFT_VIEW',
    ]);
  });

  it('waiting for a long write, a view change does not hold up the other writes at once', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    receiver ??= await startReceiver();
    const { id } = await addReceiver(deps, { url: receiver.url, view: 'language=de' });
    const [slow, other] = [buildLearningOpportunityInput(), buildLearningOpportunityInput()];
    const release = await holdCommits(slow.id, 3);
    try {
      await stack.api.writes.upsert(parseLearningOpportunityInput(slow));
      const held = stack.api.writes.publish(slow.id); // its commit takes 3 s
      await new Promise((resolve) => setTimeout(resolve, 300));
      const change = updateReceiver(deps, id, { view: 'format=ONLINE' }); // waits for the held write
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = performance.now();
      await stack.api.writes.upsert(parseLearningOpportunityInput(other));
      // Queued behind the view change's request, it would wait for the held write (2.5 s more).
      expect(performance.now() - started).to.be.below(1500);
      await Promise.all([held, change]);
    } finally {
      await release();
    }
  });

  it('a receiver added while a write is under way gets that change, or is added after its commit', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const fresh = await startReceiver();
    const input = buildLearningOpportunityInput();
    const release = await holdCommits(input.id, 1.5);
    try {
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      const held = stack.api.writes.publish(input.id); // routed, then 1.5 s to commit
      await new Promise((resolve) => setTimeout(resolve, 300));
      await addReceiver(deps, { url: fresh.url });
      // Whether the write had committed when the add returned, as the database says (the publish's
      // answer comes a little after its commit, so a flag set by it said "before" for a receiver
      // that was added after the commit, and then rightly got nothing).
      const { rows } = await testDb().pool.query<{ committed: boolean }>(
        `select exists (select from event where resource_id = $1 and type = 'LEARNING_OPPORTUNITY_PUBLISHED') as committed`,
        [input.id],
      );
      const addedAfterCommit = rows[0]!.committed;
      await held;
      const delivered = () =>
        fresh.requests.some((r) => (JSON.parse(r.body.toString()) as Delivered).resource.id === input.id);
      // Added before the write committed, it must get the write's change: the writes under way finish first.
      if (!addedAfterCommit) await eventually(async () => delivered(), 10_000, 'the change of the write under way');
    } finally {
      await release();
      await fresh.close();
    }
  });
});
