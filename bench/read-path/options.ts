// Benchmark knobs, read from the environment once. Defaults are the figures the targets are stated
// for; small values (BENCH_RECORDS=5000 BENCH_DURATION_S=3) make a quick run while developing.
export type BenchOptions = Readonly<{
  records: number;
  durationS: number;
  warmupS: number;
  connections: number;
  rounds: number;
  samples: number;
  databaseUrl: string | undefined;
}>;

export function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

export function readOptions(): BenchOptions {
  return Object.freeze({
    records: intFromEnv('BENCH_RECORDS', 100_000, 200),
    durationS: intFromEnv('BENCH_DURATION_S', 10, 1),
    warmupS: intFromEnv('BENCH_WARMUP_S', 2, 0),
    connections: intFromEnv('BENCH_CONNECTIONS', 32, 1),
    // Rounds of service and baseline back to back (ABBA); the round with the median ratio counts (less noise from a shared machine).
    rounds: intFromEnv('BENCH_ROUNDS', 3, 1),
    samples: intFromEnv('BENCH_SAMPLES', 9, 1),
    databaseUrl: process.env.DATABASE_URL || undefined,
  });
}
