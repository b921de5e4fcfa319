// The operator commands, run as a user would (a child process on the suite's database): --json
// prints only JSON, secrets are never printed, bad arguments exit 2, unknown ids exit 3.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { cli, json } from '../support/cli.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, publishOne, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const SECRET = 'cli-test-secret-do-not-print-0123';

type Receiver = {
  id: string;
  url: string;
  hasSecret: boolean;
  eventTypes: string[];
  enabled: boolean;
  createdAt: string;
};

describe('webhook commands (receivers, events, deliveries)', function () {
  // Each test starts the CLI several times (about 1 s of CPU each): minutes on a loaded 2-core machine.
  this.timeout(180_000);
  const stack = useWebhookStack({ config: { maxAttempts: 1 } });
  let receiver: TestReceiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });

  it('adds, lists, disables, enables and removes a receiver, never printing its secret', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      receiver.url,
      '--secret',
      SECRET,
      '--type',
      'LEARNING_OPPORTUNITY_PUBLISHED',
      '--type',
      'LEARNING_OPPORTUNITY_DELETED',
      '--json',
    );
    expect(added.code, added.stderr).to.equal(0);
    expect(added.stdout).to.not.include(SECRET);
    const created = json<Receiver>(added.stdout);
    expect(created).to.include({ url: receiver.url, hasSecret: true, enabled: true });
    expect(created.eventTypes).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED', 'LEARNING_OPPORTUNITY_DELETED']);
    expect(Object.keys(created).toSorted()).to.deep.equal([
      'catchUp', // its last catch-up on enable (null: none yet)
      'createdAt',
      'deadDeliveries',
      'deliveryMode',
      'disabledAt',
      'disabledReason',
      'enabled',
      'eventTypes',
      'hasSecret',
      'id',
      'lastFailureAt',
      'lastSuccessAt',
      'maxPerSecond', // its rate cap (null: none)
      'pausedUntil', // until when it asked to be left alone (a 429/503 Retry-After; null: not paused)
      'previousSecretExpiresAt', // a Standard Webhooks rotation's grace (issue 21)
      'resync', // its last resync on demand (null: none yet)
      'signatureScheme', // issue 21
      'url',
      'view', // its view (null: every record)
      'waitingDeliveries',
    ]);

    const listed = await cli('receivers', 'list', '--json');
    expect(listed.stdout).to.not.include(SECRET);
    expect(json<Receiver[]>(listed.stdout)).to.deep.include(created);

    const disabled = await cli('receivers', 'disable', created.id, '--json');
    expect(json<Receiver>(disabled.stdout)).to.include({ id: created.id, enabled: false });
    const enabled = await cli('receivers', 'enable', created.id, '--json');
    expect(json<Receiver>(enabled.stdout)).to.include({ id: created.id, enabled: true });

    const removed = await cli('receivers', 'remove', created.id, '--json');
    expect(json<Receiver & { removedJobs: number }>(removed.stdout)).to.include({ id: created.id, removedJobs: 0 });
    expect(json<Receiver[]>((await cli('receivers', 'list', '--json')).stdout).map((r) => r.id)).to.not.include(
      created.id,
    );
  });

  it('rejects bad arguments with exit 2 and unknown ids with exit 3, with a clear message', async () => {
    // (Every validation rule is covered in-process by target-policy.test.ts; here, the exit codes.)
    const cases: [string[], number, RegExp][] = [
      [
        ['receivers', 'add', '--url', 'ftp://example.org/x', '--unsigned', '--type', 'LEARNING_OPPORTUNITY_MOVED'],
        2,
        /url: must be an http or https URL/,
      ],
      [['receivers', 'disable', 'not-a-uuid'], 2, /id: must be a UUID/],
      [
        [
          'receivers',
          'update',
          '00000000-0000-4000-8000-000000000002',
          '--type',
          'LEARNING_OPPORTUNITY_UPDATED',
          '--all-types',
        ],
        2,
        /--type and --all-types exclude each other/,
      ],
      [
        ['receivers', 'update', '00000000-0000-4000-8000-000000000002', '--max-per-second', '5', '--no-max-per-second'],
        2,
        /--max-per-second and --no-max-per-second exclude each other/,
      ],
      [
        ['receivers', 'update', '00000000-0000-4000-8000-000000000002', '--no-view', '--view', 'format=ONLINE'],
        2,
        /--view and --no-view exclude each other/,
      ],
      // It exited 0 saying nothing.
      [['receivers', 'update', '00000000-0000-4000-8000-000000000002'], 2, /nothing to change: give --url/],
      [
        ['deliveries', 'replay-dead', '--event', '00000000-0000-4000-8000-000000000003'],
        3,
        /Event 00000000-0000-4000-8000-000000000003 was not found/,
      ],
      [
        ['events', 'redeliver', '00000000-0000-4000-8000-000000000000'],
        3,
        /Event 00000000-0000-4000-8000-000000000000 was not found/,
      ],
      [
        ['deliveries', 'replay-dead', '--receiver', '00000000-0000-4000-8000-000000000001'],
        3,
        /Receiver 00000000-0000-4000-8000-000000000001 was not found/,
      ],
      // Not a missing secret (2): no secret would make the id right.
      [
        ['receivers', 'rotate-secret', '00000000-0000-4000-8000-000000000004'],
        3,
        /Receiver 00000000-0000-4000-8000-000000000004 was not found/,
      ],
    ];
    for (const [args, code, message] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).to.equal(code);
      expect(result.stderr, args.join(' ')).to.match(message);
      expect(result.stdout, args.join(' ')).to.equal('');
    }
  });

  it('exits 3 for an unknown receiver in deliveries dead and replay-dead, like every other unknown id', async () => {
    const unknown = '00000000-0000-4000-8000-0000000000aa';
    for (const command of ['dead', 'replay-dead']) {
      const result = await cli('deliveries', command, '--receiver', unknown, '--json');
      expect(result.code, command).to.equal(3);
      expect(result.stderr, command).to.include(`Receiver ${unknown} was not found`);
      expect(result.stdout, command).to.equal('');
    }
  });

  it('redelivers an event, lists dead letters and replays them, keeping the event id', async () => {
    receiver.reply({ status: 500 });
    const info = await stack.addReceiver(receiver.url, { secret: SECRET });
    const eventId = await publishOne(stack);

    // One attempt (WEBHOOK_MAX_ATTEMPTS = 1 here), then a dead letter.
    await eventually(async () => (await listDeadLetters(testDb().pool)).length > 0, 20_000, 'a dead letter');
    const dead = json<{ eventId: string; receiverId: string; attempts: number; lastError: string }[]>(
      (await cli('deliveries', 'dead', '--json')).stdout,
    );
    expect(dead).to.have.length(1);
    expect(dead[0]).to.include({ eventId, receiverId: info.id, attempts: 1, lastError: 'HTTP 500' });
    // The table an operator reads shows the status code beside the error (a 410 is only there).
    const shown = (await cli('deliveries', 'dead')).stdout;
    expect(shown)
      .to.match(/lastStatusCode/)
      .and.to.match(new RegExp(`${eventId}.*\\b500\\b.*HTTP 500`));

    receiver.reply({ status: 200 });
    const replay = await cli('deliveries', 'replay-dead', '--receiver', info.id, '--json');
    expect(replay.code, replay.stderr).to.equal(0);
    expect(json(replay.stdout)).to.deep.equal({ replayed: 1, superseded: 0, remaining: 0 });
    await receiver.waitFor(2);
    expect(await listDeadLetters(testDb().pool)).to.deep.equal([]);

    const redelivered = await cli('events', 'redeliver', eventId, '--json');
    expect(redelivered.code, redelivered.stderr).to.equal(0);
    expect(json(redelivered.stdout)).to.deep.equal({
      eventId,
      eventType: 'LEARNING_OPPORTUNITY_PUBLISHED',
      receiverIds: [info.id],
      superseded: 0,
      supersededReceiverIds: [],
    });
    const requests = await receiver.waitFor(3);
    expect(requests.map((r) => r.headers['x-service-event-id'])).to.deep.equal([eventId, eventId, eventId]);
    expect(new Set(requests.map((r) => r.headers['x-service-timestamp'])).size).to.equal(3);

    // To a disabled receiver: its state is what is wrong (exit 5), not the arguments (2).
    expect((await cli('receivers', 'disable', info.id)).code).to.equal(0);
    const refused = await cli('events', 'redeliver', eventId, '--receiver', info.id);
    expect(refused.code, refused.stderr).to.equal(5);
    expect(refused.stderr).to.match(/Receiver .* is disabled; enable it first/);
  });

  it('redeliver names the receivers it skipped as superseded apart from those it queued for', async () => {
    receiver.reply({ status: 200 });
    const info = await stack.addReceiver(receiver.url, { secret: SECRET });
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Newer title' }));
    const id = input.id;
    const { rows } = await testDb().pool.query<{ id: string }>(
      `select id from event where resource_id = $1 and type = 'LEARNING_OPPORTUNITY_PUBLISHED'`,
      [id],
    );
    const first = rows[0]!.id;
    await eventually(
      async () => receiver.requests.filter((r) => JSON.parse(r.body.toString()).resource.id === id).length === 2,
      20_000,
      'both events delivered',
    );
    const skipped = await cli('events', 'redeliver', first, '--receiver', info.id);
    expect(skipped.code, skipped.stderr).to.equal(0);
    expect(skipped.stdout).to.include(`for 0 of 1 receiver(s); skipped as superseded`);
    expect(skipped.stdout.trim()).to.match(new RegExp(`: ${info.id}\\.$`));
    const sent = json<{ receiverIds: string[] }>(
      (await cli('events', 'redeliver', first, '--receiver', info.id, '--include-superseded', '--json')).stdout,
    );
    expect(sent.receiverIds).to.deep.equal([info.id]);
  });

  it("replay-dead --event says the letters left are other events', not disabled receivers'", async () => {
    receiver.reply({ status: 500 });
    const info = await stack.addReceiver(receiver.url, { secret: SECRET });
    const eventIds: string[] = [];
    for (let i = 0; i < 2; i++) eventIds.push(await publishOne(stack));
    await eventually(
      async () => (await listDeadLetters(testDb().pool, { receiverId: info.id })).length === 2,
      20_000,
      'two dead letters',
    );

    receiver.reply({ status: 200 });
    const one = await cli('deliveries', 'replay-dead', '--receiver', info.id, '--event', eventIds[0]!);
    expect(one.code, one.stderr).to.equal(0);
    // The receiver is enabled: the letter left is the other event's.
    expect(one.stdout).to.include('Replayed 1 dead letters; 0 skipped as superseded');
    expect(one.stdout).to.include("1 remain (other events' letters, and those of disabled receivers).");
  });
});
