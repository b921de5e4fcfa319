// Starts a server under test in its own child process (see server-process.ts).
import { fork } from 'node:child_process';

export type ServerUnderTest = {
  /** What it is called in the report (several services may run side by side). */
  name: string;
  url: string;
  pid: number;
  /** A full garbage collection in the server process (bench/memory); false unless started with exposeGc. */
  collectGarbage: () => Promise<boolean>;
  stop: () => Promise<void>;
};

/** `kind` is what runs (server-process.ts); `name` labels it; `rateLimit` turns the service's limits on. */
export async function startServerProcess(
  kind: 'service' | 'baseline',
  databaseUrl: string,
  options: { exposeGc?: boolean; name?: string; rateLimit?: boolean } = {},
): Promise<ServerUnderTest> {
  const name = options.name ?? kind;
  const child = fork(new URL('./server-process.ts', import.meta.url), [kind], {
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl, BENCH_RATE_LIMIT: options.rateLimit ? 'on' : 'off' },
    execArgv: [...process.execArgv, ...(options.exposeGc ? ['--expose-gc'] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`${name} process exited with code ${code} before listening`)));
    child.once('error', reject);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    url,
    pid: child.pid!,
    collectGarbage: () =>
      new Promise<boolean>((resolve) => {
        child.once('message', (message) => resolve((message as { collected?: boolean }).collected === true));
        child.send('gc');
      }),
    stop: async () => {
      if (child.exitCode === null) child.send('stop');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
