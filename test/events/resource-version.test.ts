// resource.version (docs/contract.md, "Event body"): strictly increasing per resource id across every event,
// delete and re-create included, not reset when retention prunes events; carried in the stored body
// (so feed items and deliveries stay the same bytes) and in the x-service-resource-version header;
// given to events stored before it existed, in feed order, by its migration.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { apiKeyEntities } from '../../src/auth/entities.ts';
import { catalogEntities } from '../../src/catalog/entities.ts';
import { migrate } from '../../src/db/orm.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { id: string; type: string; resource: { id: string; version: number } };

describe('resource.version', () => {
  const stack = useWebhookStack();
  let receiver: TestReceiver;

  before(async () => {
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url);
  });
  after(async () => {
    await receiver.close();
  });

  const stored = async (resourceId: string) =>
    (
      await testDb().pool.query<{ id: string; type: string; version: string; body: string }>(
        'select id, type, version, body from event where resource_id = $1 order by xid, position',
        [resourceId],
      )
    ).rows;

  it('goes 1, 2, 3, ... over publish, update, archive, delete and a re-create, and on after retention pruned the events', async () => {
    const input = buildLearningOpportunityInput();
    const { writes } = stack.api;
    await writes.upsert(parseLearningOpportunityInput(input));
    await writes.publish(input.id);
    await writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Changed once' }));
    await writes.archive(input.id);
    await writes.delete(input.id);
    // Retention removes every event of the record (once delivered); the counter is not derived from them.
    await eventually(
      async () =>
        receiver.requests.filter((r) => (JSON.parse(r.body.toString()) as Body).resource.id === input.id).length === 4,
    );
    await eventually(
      async () =>
        (
          await testDb().pool.query(
            'select 1 from delivery_attempt a join event e on e.id = a.event_id where e.resource_id = $1',
            [input.id],
          )
        ).rowCount === 4,
    );
    await testDb().pool.query(
      'delete from delivery_attempt where event_id in (select id from event where resource_id = $1)',
      [input.id],
    );
    await testDb().pool.query('delete from event where resource_id = $1', [input.id]);
    await writes.upsert(parseLearningOpportunityInput(input));
    await writes.publish(input.id);
    await writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Changed again' }));
    const events = await stored(input.id);
    expect(events.map((e) => [e.type, Number(e.version)])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', 5],
      ['LEARNING_OPPORTUNITY_UPDATED', 6],
    ]);
    for (const e of events)
      expect((JSON.parse(e.body) as Body).resource).to.deep.equal({
        type: 'LEARNING_OPPORTUNITY',
        id: input.id,
        version: Number(e.version),
      });
  });

  it('is sent as x-service-resource-version with the stored body', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Second' }));
    const requests = await eventually(async () => {
      const mine = receiver.requests.filter((r) => (JSON.parse(r.body.toString()) as Body).resource.id === input.id);
      return mine.length === 2 && mine;
    });
    const events = await stored(input.id);
    for (const r of requests) {
      const body = r.body.toString();
      const event = events.find((e) => e.body === body);
      expect(event, 'a delivered body equals a stored one').to.not.equal(undefined);
      expect(r.headers['x-service-resource-version']).to.equal(event!.version);
    }
  });

  it('its migration gives stored events versions in feed order and starts the counters after them', async () => {
    const db = testDb();
    // Back to the schema before the migration, with events as they were stored then.
    await db.pool.query(`delete from mikro_orm_migrations where name = 'Migration20261203000000_resource_version'`);
    await db.pool.query('drop table resource_version; alter table event drop column version');
    const resourceId = '00000000-0000-4000-8000-000000000abc';
    const ids = [
      '30000000-0000-4000-8000-000000000001',
      '10000000-0000-4000-8000-000000000002',
      '20000000-0000-4000-8000-000000000003',
    ];
    for (const id of ids) {
      await db.pool.query(
        `insert into event (id, type, resource_id, occurred_at, body) values ($1, 'LEARNING_OPPORTUNITY_DELETED', $2, '2026-01-01T00:00:00Z', $3)`,
        [
          id,
          resourceId,
          `{"id":"${id}","type":"LEARNING_OPPORTUNITY_DELETED","occurredAt":"2026-01-01T00:00:00.000Z","resource":{"type":"LEARNING_OPPORTUNITY","id":"${resourceId}"},"data":null}`,
        ],
      );
    }
    expect(await migrate(db.url, 3000, [...catalogEntities, ...apiKeyEntities])).to.deep.equal([
      'Migration20261203000000_resource_version',
    ]);
    const events = await stored(resourceId);
    expect(events.map((e) => [e.id, Number(e.version)])).to.deep.equal(ids.map((id, i) => [id, i + 1]));
    expect(events[1]!.body).to.equal(
      `{"id":"${ids[1]}","type":"LEARNING_OPPORTUNITY_DELETED","occurredAt":"2026-01-01T00:00:00.000Z","resource":{"type":"LEARNING_OPPORTUNITY","id":"${resourceId}","version":2},"data":null}`,
    );
    const { rows } = await db.pool.query<{ version: string }>(
      'select version from resource_version where resource_id = $1',
      [resourceId],
    );
    expect(rows[0]?.version).to.equal('3');
  });
});
