// The real service (src/app/main.ts) with a role, in a child process on the suite's database, for tests of several
// processes side by side: started with a role and extra environment, stopped with SIGTERM. Each runs in
// a process group of its own, ended after the test file, or when this process goes, if the test left it
// running (a failed test, a failed hook: child-processes.ts).
import type { ChildProcess } from 'node:child_process';
import { testDb } from '../hooks.ts';
import { spawnChild, stopChild } from './child-processes.ts';

export type RoleProcess = {
  child: ChildProcess;
  url: string | null;
  output: () => string;
  stop: () => Promise<number | null>;
};

export function startRoleProcess(role: 'api' | 'worker', env: Record<string, string> = {}): Promise<RoleProcess> {
  const child = spawnChild(process.execPath, ['src/app/main.ts', '--role', role], {
    env: {
      ...process.env,
      DATABASE_URL: testDb().url,
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      PORT: '0',
      HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return await exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${role} process did not start:\n${output}`));
      void stopChild(child);
    }, 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      // One JSON log line per event: the API logs 'listening' with its url, the worker 'delivery worker running'.
      for (const line of output.split('\n').slice(0, -1)) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'listening' || entry.msg === 'delivery worker running') {
          clearTimeout(timer);
          resolve({ child, url: entry.url ?? null, output: () => output, stop });
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => reject(new Error(`${role} process exited with ${code}:\n${output}`)));
  });
}
