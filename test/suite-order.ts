// The suite's files in the order `npm test` hands them to mocha's workers: the ones that take longest
// first, then every other file in path order. Mocha starts files in the order it is given them, and
// by path the longest ones (webhooks/, views/) came last: the run ended with two or three of them
// alone on an idle machine. On the same quiet 2-core machine (29 November) the whole suite took
// 6 min 52 s in path order, 6 min 6 s to 6 min 57 s (four runs) longest first: a small gain, inside
// the machine's swings from run to run. The list is those that took 12 s or more when each file ran
// on its own (docs/development.md, "The test suite"). A stale list costs time, never a test: a name
// that no longer exists is left out, and every test file runs exactly once.
import { globSync } from 'node:fs';

const LONGEST_FIRST = [
  'test/webhooks/rate-cap.test.ts',
  'test/webhooks/catch-up.test.ts',
  'test/console/console-resync.test.ts',
  'test/webhooks/convergence.test.ts',
  'test/console/console-firefox.test.ts',
  'test/webhooks/backpressure.test.ts',
  'test/v1/bounded-reads.test.ts',
  'test/ops/startup.test.ts',
  'test/webhooks/resync.test.ts',
  'test/console/console-firefox-pages.test.ts',
  'test/console/console.test.ts',
  'test/webhooks/receivers-cli.test.ts',
  'test/views/receiver-view-settings.test.ts',
  'test/webhooks/ordering.test.ts',
  'test/ops/left-behind-cluster.test.ts',
  'test/webhooks/cli.test.ts',
  'test/ops/suite-hygiene.test.ts',
  'test/webhooks/boss-errors.test.ts',
  'test/graphql/abuse-limits.test.ts',
  'test/webhooks/crash.test.ts',
  'test/v1/list-query-plans.test.ts',
  'test/console/console-cli-parity.test.ts',
  'test/cli/sync-refusals.test.ts',
  'test/webhooks/lost-workers.test.ts',
  'test/openapi/generated-requests.test.ts',
  'test/cli/sync-saves.test.ts',
  'test/feed/long-poll-limits.test.ts',
  'test/console/console-add-receiver.test.ts',
  'test/graphql/body-pacing.test.ts',
  'test/ops/no-process-left.test.ts',
  'test/views/feed-view.test.ts',
  'test/console/console-readable.test.ts',
  'test/webhooks/standard-webhooks-management.test.ts',
  'test/views/view-receivers.test.ts',
];

/** Every test file under `root`, the listed ones that exist first, then the rest by path. */
export function suiteOrder(root = '.'): { first: string[]; files: string[] } {
  const all = globSync('test/**/*.test.ts', { cwd: root }).sort();
  const first = LONGEST_FIRST.filter((file) => all.includes(file));
  return { first, files: [...first, ...all.filter((file) => !first.includes(file))] };
}

if (import.meta.main) process.stdout.write(suiteOrder().files.join('\n') + '\n');
