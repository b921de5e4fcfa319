// A probe, not part of bench:delivery: what one fetch of 200 costs on a pg-boss queue with the
// key_strict_fifo policy (FIFO per singletonKey) against a standard one, at a ready backlog spread
// over receiver:resource keys (4 receivers, 4 jobs per key), with per-receiver group concurrency as
// the worker fetches. The reason docs/architecture.md gives for ordering deliveries with lanes instead.
//   npx node bench/delivery/fifo-cost-probe.ts [postgres url of a server to create a scratch database on]
import { PgBoss } from 'pg-boss';
import pg from 'pg';

const admin = new pg.Client({ connectionString: process.argv[2] ?? 'postgresql://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
const db = 'fifo_cost_' + process.pid;
await admin.query(`create database ${db}`);
const target = new URL(process.argv[2] ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
target.pathname = `/${db}`;
const url = target.toString();
const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false });
await boss.start();
for (const backlog of [2000, 20000]) {
  for (const policy of ['standard', 'key_strict_fifo'] as const) {
    const name = `q_${policy}_${backlog}`;
    await boss.createQueue(name, { policy, partition: true });
    const receivers = 4;
    for (let i = 0; i < backlog; i += 5000) {
      await boss.insert(
        name,
        Array.from({ length: Math.min(5000, backlog - i) }, (_, k) => ({
          data: { n: i + k },
          group: { id: `r${(i + k) % receivers}` },
          singletonKey: `r${(i + k) % receivers}:${(i + k) % (backlog / 4)}`,
        })),
      );
    }
    const times: number[] = [];
    for (let f = 0; f < 10; f++) {
      const t = performance.now();
      const jobs = await boss.fetch(name, { batchSize: 200, groupConcurrency: 256 });
      times.push(performance.now() - t);
      await boss.deleteJob(
        name,
        jobs.map((j) => j.id),
      );
    }
    times.sort((a, b) => a - b);
    console.log(
      `${policy.padEnd(16)} backlog ${String(backlog).padStart(6)}: fetch of 200 median ${times[5]!.toFixed(1)} ms, max ${times[9]!.toFixed(1)} ms`,
    );
  }
}
await boss.stop({ graceful: false, close: true });
await admin.query(`drop database ${db} with (force)`);
await admin.end();
