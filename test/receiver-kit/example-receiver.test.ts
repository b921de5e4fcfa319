import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import {
  type ExampleReceiver,
  startExampleReceiver,
  type StoreState,
} from '../../packages/receiver-kit/examples/receiver.ts';
import { spawnChild } from '../support/child-processes.ts';

const SECRET = 'example-receiver-secret';

/** POSTs `event` signed by the algorithm of docs/contract.md, "Delivery headers" (computed here, not by the kit). */
async function post(
  receiver: ExampleReceiver,
  event: Record<string, unknown> & { id: string; type: string },
  secret = SECRET,
): Promise<number> {
  const body = JSON.stringify(event);
  const timestamp = String(Date.now());
  const res = await fetch(`${receiver.url}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-event-id': event.id,
      'x-service-event-type': event.type,
      'x-service-timestamp': timestamp,
      'x-service-signature': `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`,
    },
    body,
  });
  await res.body?.cancel();
  return res.status;
}

function snapshotEvent(type: string, resourceId: string, occurredAt: string, fields: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    type,
    occurredAt,
    // The fixtures' versions follow their times, as the service's follow its commits.
    resource: {
      type: 'LEARNING_OPPORTUNITY',
      id: resourceId,
      version: Date.parse(occurredAt) - Date.UTC(2026, 0, 1) + 1,
    },
    data:
      type === 'LEARNING_OPPORTUNITY_DELETED' || type === 'LEARNING_OPPORTUNITY_LEFT_VIEW'
        ? null
        : {
            id: resourceId,
            title: 'Urban Planning',
            status: type === 'LEARNING_OPPORTUNITY_ARCHIVED' ? 'ARCHIVED' : 'PUBLISHED',
            updatedAt: occurredAt,
            ...fields,
          },
  };
}

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

describe('example receiver (npm run example:receiver)', () => {
  let dir: string;
  let storePath: string;
  let receiver: ExampleReceiver;
  const lines: string[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lods-example-receiver-'));
    storePath = join(dir, 'store.json');
    lines.length = 0;
    receiver = await startExampleReceiver({ port: 0, secret: SECRET, storePath, log: (line) => void lines.push(line) });
  });
  afterEach(async () => {
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  });

  const fileState = async (): Promise<StoreState> => {
    await receiver.idle();
    return JSON.parse(await readFile(storePath, 'utf8')) as StoreState;
  };

  it('upserts snapshots by resource.id on PUBLISHED, UPDATED and ARCHIVED, and deletes on DELETED', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', a, at(1)))).to.equal(202);
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', b, at(2)))).to.equal(202);
    expect(
      await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_UPDATED', a, at(3), { title: 'Urban Planning II' })),
    ).to.equal(202);
    let state = await fileState();
    expect(Object.keys(state.records).sort()).to.deep.equal([a, b].sort());
    expect(state.records[a]).to.include({ title: 'Urban Planning II', updatedAt: at(3) });

    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_ARCHIVED', a, at(4)))).to.equal(202);
    state = await fileState();
    expect(state.records[a]).to.include({ status: 'ARCHIVED' });

    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_DELETED', b, at(5)))).to.equal(202);
    state = await fileState();
    expect(Object.keys(state.records)).to.deep.equal([a]);
    expect(lines.filter((l) => / -> (upserted|deleted) /.test(l))).to.have.length(5);

    const served = (await (await fetch(`${receiver.url}/records`)).json()) as { id: string }[];
    expect(served.map((r) => r.id)).to.deep.equal([a]);
  });

  it('removes a record on LEFT_VIEW (a receiver with a view: an update took it out), and a late older event does not bring it back', async () => {
    const [stays, leaves] = [randomUUID(), randomUUID()];
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', stays, at(1)))).to.equal(202);
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', leaves, at(2)))).to.equal(202);
    expect(Object.keys((await fileState()).records).sort()).to.deep.equal([stays, leaves].sort());

    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_LEFT_VIEW', leaves, at(3)))).to.equal(202);
    const state = await fileState();
    expect(Object.keys(state.records)).to.deep.equal([stays]);
    expect(lines.find((l) => l.includes(`LEARNING_OPPORTUNITY_LEFT_VIEW ${leaves}`))).to.match(
      /-> deleted \(1 records\)$/,
    );
    // An update from before it leaving, arriving late (a retry, a replay): not newer, dropped.
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_UPDATED', leaves, at(2)))).to.equal(202);
    expect(Object.keys((await fileState()).records)).to.deep.equal([stays]);
    const served = (await (await fetch(`${receiver.url}/records`)).json()) as { id: string }[];
    expect(served.map((r) => r.id)).to.deep.equal([stays]);
  });

  it('prints one line for a test event and one for a duplicate delivery', async () => {
    const receiverId = randomUUID();
    const test = {
      id: randomUUID(),
      type: 'WEBHOOK_TEST',
      occurredAt: at(0),
      resource: { type: 'WEBHOOK_RECEIVER', id: receiverId },
      data: null,
    };
    expect(await post(receiver, test)).to.equal(200);
    expect(lines.filter((l) => l.includes(test.id))).to.have.length(1);
    expect(lines.find((l) => l.includes(test.id))).to.match(
      new RegExp(`test event ${test.id} from receiver ${receiverId} acknowledged$`),
    );
    const published = snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', randomUUID(), at(1));
    expect(await post(receiver, published)).to.equal(202);
    await receiver.idle();
    expect(await post(receiver, published)).to.equal(200);
    expect(lines.filter((l) => l.includes(`duplicate ${published.id} ignored`))).to.have.length(1);
  });

  it('skips an event older than the last one applied to the same record (out-of-order delivery)', async () => {
    const id = randomUUID();
    await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_UPDATED', id, at(20), { title: 'newer' }));
    await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', id, at(10), { title: 'older' }));
    expect((await fileState()).records[id]).to.include({ title: 'newer' });
    await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_DELETED', id, at(30)));
    await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_UPDATED', id, at(25), { title: 'late' }));
    expect((await fileState()).records[id]).to.equal(undefined);
    // Each dropped event says what the store holds; what to do about a store kept from a reset
    // database is said once.
    expect(lines.filter((l) => l.includes(' -> stale '))).to.deep.equal([
      lines.find((l) => l.includes('version=11 -> stale (the store holds version 21)')),
      lines.find((l) => l.includes('version=26 -> stale (the store holds version 31)')),
    ]);
    expect(lines.filter((l) => l.includes(`delete ${storePath}`))).to.have.length(1);
  });

  it('rejects a delivery signed with another secret and leaves the store unchanged', async () => {
    const id = randomUUID();
    expect(await post(receiver, snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', id, at(1)), 'not-the-secret')).to.equal(
      401,
    );
    await receiver.idle();
    expect(receiver.store.state.records[id]).to.equal(undefined);
  });

  it('applies, on the next start, events that were accepted but not yet applied', async () => {
    await receiver.close();
    const id = randomUUID();
    // What an acknowledged-but-unprocessed event looks like after a crash: a line in the inbox.
    await writeFile(
      `${storePath}.inbox.jsonl`,
      `${JSON.stringify(snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', id, at(1)))}\n`,
    );
    receiver = await startExampleReceiver({ port: 0, secret: SECRET, storePath, log: (line) => void lines.push(line) });
    expect((await fileState()).records[id]).to.include({ id });
    expect(lines.some((l) => l.startsWith('replayed 1 event'))).to.equal(true);
  });

  it('applies a Standard Webhooks delivery (signed by the standardwebhooks library) when its secret is a whsec_ one', async () => {
    await receiver.close();
    const whsec = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
    receiver = await startExampleReceiver({ port: 0, secret: whsec, storePath, log: (line) => void lines.push(line) });
    const id = randomUUID();
    const event = snapshotEvent('LEARNING_OPPORTUNITY_PUBLISHED', id, at(1));
    const body = JSON.stringify(event);
    const sentAt = new Date();
    const headers = {
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': new StandardWebhook(whsec).sign(event.id, sentAt, body),
      'x-service-event-type': event.type,
    };
    const res = await fetch(`${receiver.url}/webhooks`, { method: 'POST', headers, body });
    expect(res.status).to.equal(202);
    expect((await fileState()).records[id]).to.include({ id });
    const forged = await fetch(`${receiver.url}/webhooks`, {
      method: 'POST',
      headers: {
        ...headers,
        'webhook-signature': new StandardWebhook(`whsec_${Buffer.alloc(32, 5).toString('base64')}`).sign(
          event.id,
          sentAt,
          body,
        ),
      },
      body,
    });
    expect(forged.status).to.equal(401);
  });
});

describe('example receiver process: fails closed', function () {
  this.timeout(20_000);
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawnChild(process.execPath, ['packages/receiver-kit/examples/receiver.ts'], {
        env: { ...process.env, WEBHOOK_SECRET: '', WEBHOOK_ALLOW_UNSIGNED: '', PORT: '0', ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
        if (stdout.includes('Register it')) child.kill('SIGTERM'); // started: stop it
      });
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  it("refuses to start without WEBHOOK_SECRET, naming WEBHOOK_ALLOW_UNSIGNED; starts with it; prints the registration line of its secret's scheme", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lods-example-unsigned-'));
    try {
      const refused = await run({ RECEIVER_STORE_PATH: join(dir, 'store.json') });
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.include('WEBHOOK_SECRET is required').and.include('WEBHOOK_ALLOW_UNSIGNED=1');
      const unsigned = await run({ RECEIVER_STORE_PATH: join(dir, 'store.json'), WEBHOOK_ALLOW_UNSIGNED: '1' });
      expect(unsigned.stdout).to.include('Signature check: OFF (WEBHOOK_ALLOW_UNSIGNED=1)');
      // The registration line it prints works as printed: an unsigned receiver needs --unsigned.
      expect(unsigned.stdout).to.match(/npm run cli -- receivers add --url \S+ --unsigned\n/);
      expect(unsigned.code).to.equal(0);
      // A whsec_ secret: registered as a standard-webhooks receiver; another one: either way.
      const standard = await run({
        RECEIVER_STORE_PATH: join(dir, 'store.json'),
        WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 4).toString('base64')}`,
      });
      expect(standard.stdout).to.match(
        /printenv WEBHOOK_SECRET \| npm run cli -- receivers add --url \S+ --scheme standard-webhooks --secret-stdin\n/,
      );
      const v1 = await run({
        RECEIVER_STORE_PATH: join(dir, 'store.json'),
        WEBHOOK_SECRET: 'example-receiver-secret-0123456789',
      });
      expect(v1.stdout).to.match(/printenv WEBHOOK_SECRET \| npm run cli -- receivers add --url \S+ --secret-stdin\n/);
      expect(v1.stdout).to.match(
        /Or as a Standard Webhooks receiver: npm run cli -- receivers add --url \S+ --scheme standard-webhooks --json\n/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
