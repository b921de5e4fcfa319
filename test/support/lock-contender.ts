// One contender for the lock beside a file (src/consumer/durable-files.ts lockBeside), in a process of its
// own: waits until the given moment, tries the lock, holds it for a while if it got it, and prints
// "held <from> <to>" (epoch ms) or "refused".
import { lockBeside } from '../../src/consumer/durable-files.ts';

const [path, at, holdMs] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4])];
await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
try {
  const release = await lockBeside(path);
  const from = Date.now();
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  const to = Date.now();
  release();
  process.stdout.write(`held ${from} ${to}\n`);
} catch {
  process.stdout.write('refused\n');
}
