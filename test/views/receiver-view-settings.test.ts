// A receiver's view as operators set and read it: `receivers add --view`, `receivers update --view` /
// `--no-view` and `receivers list` (JSON and text) in real CLI processes, and GraphQL's
// createWebhookReceiver / updateWebhookReceiver `view` and WebhookReceiver.view over HTTP. Whatever
// the spelling given, the view is read back as its canonical text (parameters sorted, values distinct
// and sorted, countries and cities in lower case); null (or none given) is every record; a bad view
// is refused naming `view` (CLI exit 2, GraphQL BAD_USER_INPUT) and changes nothing. The view's own
// event type, LEARNING_OPPORTUNITY_LEFT_VIEW, is one a receiver can subscribe to.
import { expect } from 'chai';
import { getReceiver, listReceivers } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { resetWebhooks, useWebhookStack } from '../support/webhooks.ts';

type ReceiverJson = { id: string; url: string; view: string | null; eventTypes: string[]; deliveryMode: string };

const GIVEN = 'country=DE&format=ONLINE,HYBRID';
const CANONICAL = 'country=de&format=HYBRID,ONLINE';

describe('receiver views: set and shown through the CLI and GraphQL', function () {
  // Each command is a Node process (about 1 s of CPU each).
  this.timeout(180_000);
  const pool = () => ({ pool: testDb().pool });

  describe('CLI', () => {
    before(() => resetWebhooks());

    async function run(...args: string[]): Promise<ReceiverJson> {
      const result = await cli(...args, '--json');
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).to.equal(0);
      return json<ReceiverJson>(result.stdout);
    }

    it('`receivers add --view` stores the canonical view; the text output names it; a receiver without one has null', async () => {
      const added = await run(
        'receivers',
        'add',
        '--url',
        'http://127.0.0.1:9/cli-view',
        '--unsigned',
        '--view',
        GIVEN,
      );
      expect(added.view).to.equal(CANONICAL);
      expect((await getReceiver(pool(), added.id))!.view).to.equal(CANONICAL);

      const text = await cli(
        'receivers',
        'add',
        '--url',
        'http://127.0.0.1:9/cli-view-text',
        '--unsigned',
        '--view',
        'topic=python',
      );
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.match(
        /^Added receiver .* -> http:\/\/127\.0\.0\.1:9\/cli-view-text \(.*, view: topic=python\)\.$/m,
      );

      const plain = await run('receivers', 'add', '--url', 'http://127.0.0.1:9/cli-no-view', '--unsigned');
      expect(plain.view).to.equal(null);
      const plainText = await cli('receivers', 'add', '--url', 'http://127.0.0.1:9/cli-no-view-2', '--unsigned');
      expect(plainText.stdout).to.not.match(/view:/);
    });

    it('`receivers list` shows each view: `view` in --json, a view column in the table ("every record" without one)', async () => {
      await resetWebhooks();
      const withView = await run(
        'receivers',
        'add',
        '--url',
        'http://127.0.0.1:9/list-view',
        '--unsigned',
        '--view',
        GIVEN,
      );
      const without = await run('receivers', 'add', '--url', 'http://127.0.0.1:9/list-all', '--unsigned');

      const listed = json<ReceiverJson[]>((await cli('receivers', 'list', '--json')).stdout);
      expect(listed.map((r) => [r.id, r.view])).to.deep.equal([
        [withView.id, CANONICAL],
        [without.id, null],
      ]);

      const table = await cli('receivers', 'list');
      expect(table.code, table.stderr).to.equal(0);
      const [header, ...rows] = table.stdout.trimEnd().split('\n');
      const start = header!.search(/\bview\b/);
      expect(start, `a view column in: ${header}`).to.be.greaterThan(-1);
      const cellOf = (url: string) => rows.find((r) => r.includes(url))!.slice(start);
      expect(cellOf('/list-view')).to.match(new RegExp(`^${CANONICAL.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
      expect(cellOf('/list-all')).to.match(/^every record /);
    });

    it('`receivers update --view` sets it, another change keeps it, `--no-view` removes it', async () => {
      const { id } = await run('receivers', 'add', '--url', 'http://127.0.0.1:9/update-view', '--unsigned');
      const set = await run('receivers', 'update', id, '--view', 'language=EN&format=ONLINE,ONLINE');
      expect(set.view).to.equal('format=ONLINE&language=en');

      const text = await cli('receivers', 'update', id, '--view', 'city=Berlin,BERLIN');
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.match(/^Receiver .*, view: city=berlin\)\.$/m);

      const kept = await run('receivers', 'update', id, '--mode', 'latest-state');
      expect(kept).to.include({ deliveryMode: 'LATEST_STATE', view: 'city=berlin' });

      const removed = await run('receivers', 'update', id, '--no-view');
      expect(removed.view).to.equal(null);
      expect((await getReceiver(pool(), id))!.view).to.equal(null);
    });

    it('refuses a bad view with exit 2 naming view, and changes nothing (add adds nothing, update keeps the old view)', async () => {
      const { id } = await run(
        'receivers',
        'add',
        '--url',
        'http://127.0.0.1:9/bad-view',
        '--unsigned',
        '--view',
        GIVEN,
      );
      const before = (await listReceivers(pool())).length;
      const cases: [string, RegExp][] = [
        ['colour=red', /view: colour is not a view parameter/],
        ['format=ONLINE&limit=5', /view: limit is not a view parameter/],
        ['format=TELEPATHY', /view: format/],
        ['', /view: must hold at least one of city, country, format, language, provider, topic/],
      ];
      for (const [bad, message] of cases) {
        const added = await cli(
          'receivers',
          'add',
          '--url',
          'http://127.0.0.1:9/bad-view-2',
          '--unsigned',
          '--view',
          bad,
        );
        expect([added.code, added.stdout], `add --view '${bad}'`).to.deep.equal([2, '']);
        expect(added.stderr, `add --view '${bad}'`).to.match(message);
        const updated = await cli('receivers', 'update', id, '--view', bad, '--url', 'http://127.0.0.1:9/moved');
        expect([updated.code, updated.stdout], `update --view '${bad}'`).to.deep.equal([2, '']);
        expect(updated.stderr, `update --view '${bad}'`).to.match(message);
      }
      expect((await listReceivers(pool())).length, 'nothing added').to.equal(before);
      expect(await getReceiver(pool(), id)).to.include({ view: CANONICAL, url: 'http://127.0.0.1:9/bad-view' });
    });

    it('LEARNING_OPPORTUNITY_LEFT_VIEW is an event type a receiver subscribes to', async () => {
      const added = await run(
        'receivers',
        'add',
        '--url',
        'http://127.0.0.1:9/left-view-type',
        '--unsigned',
        '--view',
        'format=ONLINE',
        '--type',
        'LEARNING_OPPORTUNITY_PUBLISHED',
        '--type',
        'LEARNING_OPPORTUNITY_LEFT_VIEW',
      );
      expect(added.eventTypes).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED', 'LEARNING_OPPORTUNITY_LEFT_VIEW']);
      const help = await cli('receivers', 'add', '--help');
      expect(help.stdout).to.include('LEARNING_OPPORTUNITY_LEFT_VIEW').and.include('--view <view>');
    });
  });

  describe('GraphQL', () => {
    const stack = useWebhookStack({ worker: false });
    let key: string;
    before(async () => {
      key = await createTestKey(['receivers:manage']);
    });

    const FIELDS = 'id url view eventTypes';
    type Gql = { id: string; url: string; view: string | null; eventTypes: string[] };
    const create = (input: Record<string, unknown>) =>
      graphql<{ createWebhookReceiver: Gql }>(
        stack.api,
        key,
        `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${FIELDS} } }`,
        { input },
      );
    const update = (id: string, input: Record<string, unknown>) =>
      graphql<{ updateWebhookReceiver: Gql }>(
        stack.api,
        key,
        `mutation($id: ID!, $input: UpdateWebhookReceiverInput!) { updateWebhookReceiver(id: $id, input: $input) { ${FIELDS} } }`,
        { id, input },
      );
    const read = async (id: string) =>
      (
        await graphql<{ webhookReceiver: Gql | null }>(
          stack.api,
          key,
          `query($id: ID!) { webhookReceiver(id: $id) { ${FIELDS} } }`,
          { id },
        )
      ).body.data!.webhookReceiver!;
    const invalidParams = (errors: unknown) => {
      const [error] = errors as { extensions: { code: string; invalidParams?: { name: string; reason: string }[] } }[];
      expect(error!.extensions.code).to.equal('BAD_USER_INPUT');
      return error!.extensions.invalidParams!;
    };

    it('createWebhookReceiver takes a view and WebhookReceiver.view reads it back canonical; without one it is null', async () => {
      const created = await create({ url: 'http://127.0.0.1:9/gql-view', view: GIVEN });
      expect(created.body.errors).to.equal(undefined);
      const { id } = created.body.data!.createWebhookReceiver;
      expect(created.body.data!.createWebhookReceiver.view).to.equal(CANONICAL);
      expect((await read(id)).view).to.equal(CANONICAL);
      const all = await graphql<{ webhookReceivers: Gql[] }>(stack.api, key, `{ webhookReceivers { ${FIELDS} } }`);
      expect(all.body.data!.webhookReceivers.find((r) => r.id === id)!.view).to.equal(CANONICAL);

      const plain = await create({ url: 'http://127.0.0.1:9/gql-no-view' });
      expect(plain.body.data!.createWebhookReceiver.view).to.equal(null);
      const nulled = await create({ url: 'http://127.0.0.1:9/gql-null-view', view: null });
      expect(nulled.body.data!.createWebhookReceiver.view).to.equal(null);
    });

    it('updateWebhookReceiver: a view sets it, omitted keeps it, null removes it', async () => {
      const { id } = (await create({ url: 'http://127.0.0.1:9/gql-update' })).body.data!.createWebhookReceiver;
      const set = await update(id, { view: GIVEN });
      expect(set.body.errors).to.equal(undefined);
      expect(set.body.data!.updateWebhookReceiver.view).to.equal(CANONICAL);
      const kept = await update(id, { url: 'http://127.0.0.1:9/gql-update-2' });
      expect(kept.body.data!.updateWebhookReceiver).to.include({
        url: 'http://127.0.0.1:9/gql-update-2',
        view: CANONICAL,
      });
      const changed = await update(id, { view: 'topic=python,data&provider=Northwind%20University' });
      expect(changed.body.data!.updateWebhookReceiver.view).to.equal(
        'provider=Northwind%20University&topic=data,python',
      );
      const removed = await update(id, { view: null });
      expect(removed.body.data!.updateWebhookReceiver.view).to.equal(null);
      expect((await read(id)).view).to.equal(null);
      expect((await getReceiver({ pool: testDb().pool }, id))!.view).to.equal(null);
    });

    it('a bad view is BAD_USER_INPUT naming view, and the receiver is unchanged (create creates nothing)', async () => {
      const { id } = (await create({ url: 'http://127.0.0.1:9/gql-bad', view: GIVEN })).body.data!
        .createWebhookReceiver;
      const receiversBefore = (await listReceivers({ pool: testDb().pool })).length;
      for (const bad of ['colour=red', 'format=ONLINE&sort=title', '']) {
        const refusedUpdate = await update(id, { view: bad, url: 'http://127.0.0.1:9/gql-bad-moved' });
        expect(refusedUpdate.body.data ?? null, `update view '${bad}'`).to.equal(null);
        const params = invalidParams(refusedUpdate.body.errors);
        expect(
          params.map((p) => p.name),
          `update view '${bad}'`,
        ).to.deep.equal(params.map(() => 'view'));
        expect(params).to.not.have.length(0);

        const refusedCreate = await create({ url: 'http://127.0.0.1:9/gql-bad-2', view: bad });
        expect(
          invalidParams(refusedCreate.body.errors).map((p) => p.name),
          `create view '${bad}'`,
        ).to.include('view');
      }
      expect(await read(id)).to.include({ view: CANONICAL, url: 'http://127.0.0.1:9/gql-bad' });
      expect((await listReceivers({ pool: testDb().pool })).length, 'nothing created').to.equal(receiversBefore);
    });

    it('types take LEARNING_OPPORTUNITY_LEFT_VIEW (the EventType enum has it)', async () => {
      const created = await create({
        url: 'http://127.0.0.1:9/gql-left-view-type',
        view: 'format=ONLINE',
        types: ['LEARNING_OPPORTUNITY_UPDATED', 'LEARNING_OPPORTUNITY_LEFT_VIEW'],
      });
      expect(created.body.errors).to.equal(undefined);
      expect(created.body.data!.createWebhookReceiver.eventTypes).to.deep.equal([
        'LEARNING_OPPORTUNITY_UPDATED',
        'LEARNING_OPPORTUNITY_LEFT_VIEW',
      ]);
    });
  });
});
