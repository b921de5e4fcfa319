// seed --count N
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { seedCatalog } from '../catalog/seed.ts';
import { positiveInt } from './arguments.ts';
import { output, progress, withDatabase } from './run.ts';

export function registerSeedCommand(program: Command, config: Config): void {
  program
    .command('seed')
    .description('insert a generated, realistic catalog of published records (no events are emitted)')
    .requiredOption('--count <n>', 'how many records')
    .option(
      '--seed <n>',
      'random seed, for a reproducible catalog (running the same seed again inserts only what is missing)',
    )
    .option('--batch-size <n>', 'records per transaction (one insert statement each)', '1000')
    .option(
      '--connections <n>',
      'database sessions inserting batches at the same time, while the next batch renders',
      '2',
    )
    .option('--json', 'print JSON only')
    .action(async (opts: { count: string; seed?: string; batchSize: string; connections: string; json?: boolean }) => {
      const count = positiveInt('--count', opts.count);
      const batchSize = positiveInt('--batch-size', opts.batchSize);
      const connections = positiveInt('--connections', opts.connections);
      const seed = opts.seed === undefined ? undefined : positiveInt('--seed', opts.seed);
      const started = Date.now();
      const result = await withDatabase(config, (db) =>
        seedCatalog(db.pool, {
          count,
          batchSize,
          seed,
          connections,
          onProgress: ({ done, total }) => progress(`seeded ${done}/${total}`),
        }),
      );
      if (process.stderr.isTTY) process.stderr.write('\n');
      const summary = { inserted: result.inserted, skipped: result.skipped, seconds: (Date.now() - started) / 1000 };
      const skippedText = summary.skipped
        ? ` (${summary.skipped} already present from an earlier run with this seed, kept as they were)`
        : '';
      output(
        opts.json,
        summary,
        () => `Inserted ${summary.inserted} published records in ${summary.seconds.toFixed(1)} s${skippedText}.`,
      );
    });
}
