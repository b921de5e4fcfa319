// The service as an operator runs it: `npm start` (or `node src/app/main.ts`) in a process group of its
// own, as a terminal's foreground job is, so that a test can send a signal to the whole group (the
// group is ended after the test file, or when this process goes, if the test left it: child-processes.ts).
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { spawnChild } from './child-processes.ts';

export const REPO = resolve(import.meta.dirname, '../..');

export type ServiceProcess = {
  child: ChildProcess;
  output: () => string;
  /** JSON log lines printed so far. */
  logs: () => Record<string, unknown>[];
  /** The `url` of the 'listening' log line. */
  url: string;
  /** Sends `signal` to every process of the group (npm, node), as Ctrl-C in a terminal does. */
  signalGroup: (signal: NodeJS.Signals) => void;
  exited: Promise<number | null>;
};

export async function startService(options: {
  cwd?: string;
  env: Record<string, string>;
  viaNpm?: boolean;
}): Promise<ServiceProcess> {
  const [command, args] = options.viaNpm ? ['npm', ['start', '--silent']] : [process.execPath, ['src/app/main.ts']];
  const child = spawnChild(command, args, {
    cwd: options.cwd ?? REPO,
    // The embedded default unless the test names a database (the suite's own DATABASE_URL is not one).
    env: {
      ...process.env,
      DATABASE_URL: '',
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'development',
      DEMO_SEED_COUNT: '0',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const logs = () =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const url = await new Promise<string>((resolveUrl, reject) => {
    const check = () => {
      const listening = logs().find((l) => l.msg === 'listening');
      // Outside production the banner follows the log line: wait for its end (a blank line) too.
      const banner = output.indexOf('is running at');
      const printed = options.env.NODE_ENV === 'production' || (banner >= 0 && output.indexOf('\n\n', banner) >= 0);
      if (listening && printed) resolveUrl(String(listening.url));
    };
    child.stdout!.on('data', check);
    void exited.then((code) => reject(new Error(`the service exited with ${code} before listening:\n${output}`)));
  });
  return { child, output: () => output, logs, url, signalGroup: (signal) => process.kill(-child.pid!, signal), exited };
}
