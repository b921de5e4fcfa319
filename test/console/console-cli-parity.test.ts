// Every console action has the effect of its command (docs/console.md, issue 23): two receivers
// in the same state, one handled by a button in the browser, the other by the matching command, end
// in the same state and get the same deliveries. Disable = `receivers disable`, Enable = `receivers
// enable`, Replay = `deliveries replay-dead --receiver R --event E`, Replay all = `deliveries
// replay-dead --receiver R`, Send test event = `receivers test`, Rotate secret = `receivers
// rotate-secret` (the console makes the secret and shows it once).
import { expect } from 'chai';
import { unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { verifyDelivery } from '@lods/receiver-kit';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { listReceivers, type ReceiverInfo } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { createTestKey } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { cli } from '../support/cli.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import {
  deliveryState,
  eventually,
  publishOne,
  resetWebhooks,
  startWebhookStack,
  type WebhookStack,
} from '../support/webhooks.ts';

const SECRET = 'parity-test-secret-0123456789abcdef';

describe('console actions = CLI commands', function () {
  this.timeout(180_000); // four CLI runs and a browser: 70 s seen on a slow 2-core machine with 4 files in parallel
  let stack: WebhookStack;
  let browser: Browser | null = null;
  let page: Page;
  let viaConsole: { receiver: TestReceiver; id: string };
  let viaCli: { receiver: TestReceiver; id: string };
  const errors: string[] = [];

  /** What an operator sees of a receiver, without what differs by identity or time. */
  const state = (r: ReceiverInfo) => ({
    enabled: r.enabled,
    disabledReason: r.disabledReason,
    hasSecret: r.hasSecret,
    waitingDeliveries: r.waitingDeliveries,
    deadDeliveries: r.deadDeliveries,
  });
  async function states(): Promise<[unknown, unknown]> {
    const all = await listReceivers({ pool: testDb().pool });
    return [state(all.find((r) => r.id === viaConsole.id)!), state(all.find((r) => r.id === viaCli.id)!)];
  }
  async function expectSameState(): Promise<void> {
    const [a, b] = await states();
    expect(a).to.deep.equal(b);
  }
  async function command(...args: string[]): Promise<void> {
    const run = await cli(...args);
    expect(run.code, run.stderr).to.equal(0);
  }
  /** A publication both receivers get; they fail it (maxAttempts 1) into a dead letter each. */
  async function deadLetterForBoth(): Promise<string> {
    viaConsole.receiver.reply({ status: 500 });
    viaCli.receiver.reply({ status: 500 });
    const eventId = await publishOne(stack);
    for (const { id } of [viaConsole, viaCli]) {
      await eventually(
        async () => (await listDeadLetters(testDb().pool, { receiverId: id })).some((l) => l.eventId === eventId),
        10_000,
        'dead letter',
      );
    }
    viaConsole.receiver.reply({ status: 200 });
    viaCli.receiver.reply({ status: 200 });
    return eventId;
  }
  const row = () => page.locator('tr', { hasText: viaConsole.receiver.url });
  async function receiversPage(): Promise<void> {
    await page.goto(`${stack.api.url}/console#/receivers`);
    await page.reload();
    await row().waitFor();
  }
  async function receiverPage(): Promise<void> {
    await page.goto(`${stack.api.url}/console#/receivers/${viaConsole.id}`);
    await page.reload();
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
  }
  /** The receiver's first `count` requests; waited for in vain, the queue's state for it says why. */
  const arrived = (r: { receiver: TestReceiver; id: string }, count: number) =>
    r.receiver
      .waitFor(count)
      .catch(async (error: Error) => Promise.reject(new Error(`${error.message}: ${await deliveryState(r.id)}`)));
  const lastBody = (r: TestReceiver) => JSON.parse(r.requests.at(-1)!.body.toString()) as Record<string, unknown>;

  before(async function () {
    this.timeout(600_000);
    await resetWebhooks();
    // One attempt (a failure is a dead letter at once), so a slow answer must not count as one: the
    // receivers run in this process, which the browser and the CLI runs keep busy on a loaded 2-core
    // machine (the suite's 1 s timeout once turned the console's test event into a dead letter).
    stack = await startWebhookStack({ config: { maxAttempts: 1, timeoutMs: 15_000 } });
    browser = await launchChromiumOrSkip(this);
    const add = async () => {
      const receiver = await startReceiver();
      return { receiver, id: (await stack.addReceiver(receiver.url, { secret: SECRET })).id };
    };
    viaConsole = await add();
    viaCli = await add();
    page = await browser.newPage();
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${stack.api.url}/console`);
    await page.getByLabel('API key').fill(await createTestKey(['receivers:manage', 'graphql:read']));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    for (const r of [viaConsole, viaCli]) await r?.receiver.close();
  });
  afterEach(() => expect(errors).to.deep.equal([]));

  it('Disable and Enable', async () => {
    await receiversPage();
    await row().getByRole('button', { name: 'Disable' }).click();
    await row().getByRole('button', { name: 'Enable' }).waitFor();
    await command('receivers', 'disable', viaCli.id);
    await expectSameState();
    expect((await states())[0]).to.include({ enabled: false, disabledReason: 'manual' });

    await row().getByRole('button', { name: 'Enable' }).click();
    await row().getByRole('button', { name: 'Disable' }).waitFor();
    await command('receivers', 'enable', viaCli.id);
    await expectSameState();
    expect((await states())[0]).to.include({ enabled: true, disabledReason: null });
  });

  it('on the receiver page: Disable says its dead letters, Replay waits for Enable, and Enable is there too', async () => {
    const eventId = await deadLetterForBoth();
    const { rows } = await testDb().pool.query<{ resource_id: string }>('select resource_id from event where id = $1', [
      eventId,
    ]);
    const resource = rows[0]!.resource_id;
    const settings = page.locator('section.settings');
    await receiverPage();
    await settings.getByRole('button', { name: 'Disable' }).click();
    await page.getByText(/^Disabled .*it has 1 dead letter\)/).waitFor();
    await command('receivers', 'disable', viaCli.id);
    await expectSameState();
    // Disabled, a replay would send nothing: the buttons wait for Enable, and the page says so.
    await settings.getByRole('button', { name: 'Enable' }).waitFor();
    expect(await page.getByRole('button', { name: 'Replay all' }).isDisabled()).to.equal(true);
    expect(await page.getByRole('button', { name: 'Replay', exact: true }).isDisabled()).to.equal(true);
    await page.getByText('The receiver is disabled: enable it first').waitFor();

    // Enabled there, its catch-up sends the record it never got, which supersedes the letter.
    const before = [viaConsole.receiver.requests.length, viaCli.receiver.requests.length];
    await settings.getByRole('button', { name: 'Enable' }).click();
    await page.getByText(/^Enabled .*Catch-up: the 1 record it missed.*Its 1 dead letter stays on its page/).waitFor();
    await settings.getByRole('button', { name: 'Disable' }).waitFor();
    await command('receivers', 'enable', viaCli.id);
    await arrived(viaConsole, before[0]! + 1);
    await arrived(viaCli, before[1]! + 1);
    const resourceOf = (r: TestReceiver) => (lastBody(r).resource as { id: string }).id;
    expect([resourceOf(viaConsole.receiver), resourceOf(viaCli.receiver)]).to.deep.equal([resource, resource]);
    expect(await page.getByRole('button', { name: 'Replay all' }).isDisabled()).to.equal(false);
    await page.getByRole('button', { name: 'Replay all' }).click();
    await page.getByText('Nothing replayed: 1 dead letter skipped as superseded').waitFor();
    await command('deliveries', 'replay-dead', '--receiver', viaCli.id);
    await eventually(
      async () => JSON.stringify((await states())[0]) === JSON.stringify((await states())[1]),
      5000,
      'same state',
    );
    expect((await states())[0]).to.include({ enabled: true, deadDeliveries: 0 });
  });

  it('Replay (one dead letter) and Replay all', async () => {
    const first = await deadLetterForBoth();
    const second = await deadLetterForBoth();
    await expectSameState();
    expect((await states())[0]).to.include({ deadDeliveries: 2 });

    const before = [viaConsole.receiver.requests.length, viaCli.receiver.requests.length];
    await receiverPage();
    await page.locator('section.dead-letters tr', { hasText: first }).getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Replayed 1 dead letter').waitFor();
    await command('deliveries', 'replay-dead', '--receiver', viaCli.id, '--event', first);
    await arrived(viaConsole, before[0]! + 1);
    await arrived(viaCli, before[1]! + 1);
    expect([lastBody(viaConsole.receiver).id, lastBody(viaCli.receiver).id]).to.deep.equal([first, first]);
    await eventually(
      async () => JSON.stringify((await states())[0]) === JSON.stringify((await states())[1]),
      5000,
      'same state',
    );
    expect((await states())[0]).to.include({ deadDeliveries: 1 });

    await page.getByRole('button', { name: 'Replay all' }).click();
    await page.getByText('Replayed 1 dead letter').waitFor();
    await command('deliveries', 'replay-dead', '--receiver', viaCli.id);
    await arrived(viaConsole, before[0]! + 2);
    await arrived(viaCli, before[1]! + 2);
    expect([lastBody(viaConsole.receiver).id, lastBody(viaCli.receiver).id]).to.deep.equal([second, second]);
    await eventually(
      async () => JSON.stringify((await states())[0]) === JSON.stringify((await states())[1]),
      5000,
      'same state',
    );
    expect((await states())[0]).to.include({ deadDeliveries: 0 });
  });

  it('Replay all skips, and says it skipped, a dead letter whose record has since reached the receiver newer', async () => {
    const eventId = await deadLetterForBoth();
    const { rows } = await testDb().pool.query<{ resource_id: string }>('select resource_id from event where id = $1', [
      eventId,
    ]);
    const before = [viaConsole.receiver.requests.length, viaCli.receiver.requests.length];
    // The record changes again, and both receivers get that newer version.
    await stack.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id: rows[0]!.resource_id, title: 'Newer' })),
    );
    await arrived(viaConsole, before[0]! + 1);
    await arrived(viaCli, before[1]! + 1);
    await expectSameState();
    expect((await states())[0]).to.include({ deadDeliveries: 1, waitingDeliveries: 0 });

    await receiverPage();
    await page.getByRole('button', { name: 'Replay all' }).click();
    await page.getByText('Nothing replayed: 1 dead letter skipped as superseded').waitFor();
    const run = await cli('deliveries', 'replay-dead', '--receiver', viaCli.id);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.include('Replayed 0 dead letters; 1 skipped as superseded');
    await expectSameState();
    expect((await states())[0]).to.include({ deadDeliveries: 0, waitingDeliveries: 0 });
    // Neither receiver got the old version again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([viaConsole.receiver.requests.length, viaCli.receiver.requests.length]).to.deep.equal([
      before[0]! + 1,
      before[1]! + 1,
    ]);
  });

  it('Send test event and Rotate secret', async () => {
    const before = [viaConsole.receiver.requests.length, viaCli.receiver.requests.length];
    await receiversPage();
    await row().getByRole('button', { name: 'Send test event' }).click();
    await command('receivers', 'test', viaCli.id);
    const [a, b] = [
      (await viaConsole.receiver.waitFor(before[0]! + 1)).at(-1)!,
      (await viaCli.receiver.waitFor(before[1]! + 1)).at(-1)!,
    ];
    const shape = (body: Record<string, unknown>, id: string) => ({
      ...body,
      id: 'x',
      occurredAt: 'x',
      resource: { ...(body.resource as object), id: (body.resource as { id: string }).id === id },
    });
    expect(shape(lastBody(viaConsole.receiver), viaConsole.id)).to.deep.equal(
      shape(lastBody(viaCli.receiver), viaCli.id),
    );
    expect(Object.keys(a.headers).sort()).to.deep.equal(Object.keys(b.headers).sort());
    for (const d of [a, b])
      expect(verifyDelivery({ rawBody: d.body, headers: d.headers, secret: SECRET })).to.include({ ok: true });

    await row().getByRole('button', { name: 'Rotate secret' }).click();
    const consoleSecret = await page.locator('#notice code.secret').innerText();
    const file = join(tmpdir(), `lods-parity-${process.pid}.secret`);
    const cliSecret = 'parity-cli-rotated-secret-0123456789';
    writeFileSync(file, cliSecret, { mode: 0o600 });
    await command('receivers', 'rotate-secret', viaCli.id, '--secret-file', file);
    unlinkSync(file);
    await expectSameState();
    await command('receivers', 'test', viaConsole.id);
    await command('receivers', 'test', viaCli.id);
    const [c, d] = [
      (await viaConsole.receiver.waitFor(before[0]! + 2)).at(-1)!,
      (await viaCli.receiver.waitFor(before[1]! + 2)).at(-1)!,
    ];
    expect(verifyDelivery({ rawBody: c.body, headers: c.headers, secret: consoleSecret })).to.include({ ok: true });
    expect(verifyDelivery({ rawBody: d.body, headers: d.headers, secret: cliSecret })).to.include({ ok: true });
    for (const x of [c, d])
      expect(verifyDelivery({ rawBody: x.body, headers: x.headers, secret: SECRET })).to.include({ ok: false });
  });
});
