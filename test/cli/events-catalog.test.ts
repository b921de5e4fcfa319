// `events list` and `catalog rerender`, run as an operator runs them (a child process on the suite's
// database): newest first and filtered; validated arguments exit 2; a re-render fixes a stale
// representation without an event or a new updatedAt, and a second run changes nothing.
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { startTestApi } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { createRecord } from '../support/factories.ts';
import type { Api } from '../../src/app/service.ts';

type EventRow = { id: string; type: string; resourceId: string; occurredAt: string; inFeed: boolean };

describe('events list and catalog rerender commands', function () {
  // Each command is a Node process loading the ORM: seconds each on a busy machine.
  this.timeout(180_000);
  let api: Api;
  let first: string;
  let second: string;
  before(async () => {
    api = await startTestApi();
    first = (await createRecord(api.writes, {}, { publish: true })).id;
    second = (await createRecord(api.writes, {}, { publish: true })).id;
    await api.writes.archive(first);
  });
  after(() => api.close());

  it('lists stored events newest first, by type, by resource, limited', async () => {
    const all = await cli('events', 'list', '--json');
    expect(all.code, all.stderr).to.equal(0);
    const events = json<EventRow[]>(all.stdout);
    expect(events.length).to.be.at.most(50);
    expect(events[0]).to.have.keys(['id', 'type', 'resourceId', 'occurredAt', 'inFeed']);
    // (Other test files' events share the database: only the order is checked here.)
    expect(events.map((e) => e.occurredAt)).to.deep.equal(
      events
        .map((e) => e.occurredAt)
        .toSorted()
        .reverse(),
    );

    const published = json<EventRow[]>(
      (await cli('events', 'list', '--resource', first, '--type', 'LEARNING_OPPORTUNITY_PUBLISHED', '--json')).stdout,
    );
    expect(published.map((e) => [e.type, e.resourceId])).to.deep.equal([['LEARNING_OPPORTUNITY_PUBLISHED', first]]);
    // Text output, the newest of the record's two events only.
    const text = await cli('events', 'list', '--resource', first, '--limit', '1');
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout).to.match(/^id\s+type\s+resourceId\s+occurredAt\s+inFeed\n/);
    expect(text.stdout).to.include('LEARNING_OPPORTUNITY_ARCHIVED').and.not.include('LEARNING_OPPORTUNITY_PUBLISHED');
  });

  it('refuses bad arguments with exit 2 and a message', async () => {
    for (const [args, message] of [
      [['events', 'list', '--type', 'LEARNING_OPPORTUNITY_MOVED'], /--type must be one of/],
      [['events', 'list', '--limit', '0'], /--limit must be a positive integer/],
      [['events', 'list', '--limit', '1001'], /at most 1000/],
      [['events', 'list', '--resource', 'nope'], /resource: must be a UUID/],
      [['catalog', 'rerender', '--batch-size', 'x'], /--batch-size must be a positive integer/],
    ] as const) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stderr, args.join(' ')).to.match(message);
      expect(run.stdout).to.equal('');
    }
  });

  it('re-renders a stale doc with no event and the same updatedAt, and is a no-op the second time', async () => {
    const pool = testDb().pool;
    const before = (
      await pool.query<{ doc: string; updated_at: string }>(
        'select doc, updated_at from learning_opportunity where id = $1',
        [second],
      )
    ).rows[0]!;
    const events = async () => Number((await pool.query('select count(*) from event')).rows[0].count);
    const eventCount = await events();
    // What an older renderer would have stored: the same record without its last field.
    const stale = JSON.stringify(
      Object.fromEntries(Object.entries(JSON.parse(before.doc) as Record<string, unknown>).slice(0, -1)),
    );
    await pool.query('update learning_opportunity set doc = $2 where id = $1', [second, stale]);

    const run = await cli('catalog', 'rerender', '--batch-size', '2', '--json');
    expect(run.code, run.stderr).to.equal(0);
    const result = json<{ scanned: number; changed: number }>(run.stdout);
    const total = Number((await pool.query('select count(*) from learning_opportunity')).rows[0].count);
    expect(result).to.deep.equal({ scanned: total, changed: 1 });
    expect(run.stderr).to.match(/rerender: 2 records scanned/);
    const after = (
      await pool.query<{ doc: string; updated_at: string }>(
        'select doc, updated_at from learning_opportunity where id = $1',
        [second],
      )
    ).rows[0]!;
    expect(after.doc).to.equal(before.doc);
    expect(after.updated_at).to.equal(before.updated_at);
    expect(await events()).to.equal(eventCount);

    expect(json<{ changed: number }>((await cli('catalog', 'rerender', '--json')).stdout).changed).to.equal(0);
    expect((await cli('catalog', 'rerender')).stdout).to.match(/^Scanned \d+ records; 0 had a stale representation/);
  });
});
