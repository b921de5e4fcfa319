// catalog rerender
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { rerenderCatalog } from '../catalog/rerender.ts';
import { positiveInt } from './arguments.ts';
import { output, progress, withDatabase } from './run.ts';

export function registerCatalogCommands(program: Command, config: Config): void {
  const catalog = program.command('catalog').description('the stored catalog');

  catalog
    .command('rerender')
    .description(
      'render every stored record again after a renderer change (no events, updatedAt unchanged; a no-op when nothing changed)',
    )
    .option('--batch-size <n>', 'records per batch (1..5000)', '500')
    .option('--json', 'print JSON only: { scanned, changed }')
    .action(async (opts: { batchSize: string; json?: boolean }) => {
      const batchSize = positiveInt('--batch-size', opts.batchSize, 5000);
      const result = await withDatabase(config, (db) =>
        rerenderCatalog(db, {
          batchSize,
          onProgress: (p) => progress(`rerender: ${p.scanned} records scanned, ${p.changed} changed`),
        }),
      );
      if (result.scanned && process.stderr.isTTY) process.stderr.write('\n');
      output(
        opts.json,
        result,
        () =>
          `Scanned ${result.scanned} records; ${result.changed} had a stale representation and were rendered again.`,
      );
    });
}
