// One mix of catalog writes through the one write path, for the tests of what statement-level
// triggers maintain beside the catalog (facet_count, list_entry, list_session): a bulk seed, drafts
// upserted then published in bulk, published records whose values and sessions change (two sessions
// in one city, one without a location) in one statement, one that loses every session, archives, a republish, deletes, and raw
// statements of many rows (an update that moves them, a bulk archive, a bulk delete). `check` runs
// after every step.
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from './factories.ts';

export async function runMixedCatalogWrites(options: {
  seedCount: number;
  seed: number;
  /** A topic of the records this mix adds (so a check can tell them apart). */
  topic: string;
  check: () => Promise<void>;
}): Promise<void> {
  const { check } = options;
  const pool = testDb().pool;
  await seedCatalog(pool, { count: options.seedCount, seed: options.seed, batchSize: 250 });
  await check();

  const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
  const inputs = Array.from({ length: 30 }, (_, i) =>
    buildLearningOpportunityInput({
      format: i % 2 ? 'ONLINE' : 'IN_PERSON',
      topics: [options.topic, `t${i % 3}`, options.topic],
    }),
  );
  await writes.upsertMany(inputs.map((input) => parseLearningOpportunityInput(input)));
  await check();
  await writes.publishMany(inputs.map((input) => input.id));
  await check();
  const changed = inputs.slice(0, 12).map((input, i) =>
    parseLearningOpportunityInput({
      ...input,
      format: 'HYBRID',
      language: i % 2 ? 'fr' : null,
      topics: ['changed'],
      sessions: [
        {
          ...(input.sessions as Record<string, unknown>[])[0]!,
          location: { name: 'Hall', address: '2 Rue', city: 'Lyon', country: 'FR' },
        },
        {
          ...(input.sessions as Record<string, unknown>[])[1]!,
          location: { name: 'Hall', address: '3 Rue', city: 'Lyon', country: 'FR' },
        },
        { ...(input.sessions as Record<string, unknown>[])[0]!, id: crypto.randomUUID(), location: null },
      ],
    }),
  );
  await writes.upsertMany(changed);
  // A published record that loses every session (no places, no starts).
  await writes.upsertMany([parseLearningOpportunityInput({ ...inputs[13]!, sessions: [] })]);
  await check();
  for (const input of inputs.slice(10, 16)) await writes.archive(input.id);
  await check();
  await writes.publishMany(inputs.slice(10, 13).map((input) => input.id));
  for (const input of inputs.slice(20, 25)) await writes.delete(input.id);
  await check();
  await pool.query(
    `update learning_opportunity set updated_at = updated_at + interval '1 second' where id in (select id from learning_opportunity order by id limit 300)`,
  );
  await pool.query(
    `update learning_opportunity set status = 'ARCHIVED' where id in (select id from learning_opportunity where status = 'PUBLISHED' order by id desc limit 150)`,
  );
  await pool.query(
    `delete from learning_opportunity where id in (select id from learning_opportunity order by updated_at limit 200)`,
  );
  await check();
}
