// `npm run cli -- …` as a child process, for the end-to-end cli tests.
import type { ChildProcess } from 'node:child_process';
import { spawnChild } from '../support/child-processes.ts';

export type Run = { code: number | null; stdout: string; stderr: string };

/** A running command: its output so far, and its end (exit code, all of its output). */
export type RunningCli = { child: ChildProcess; stdout: () => string; stderr: () => string; done: Promise<Run> };

export function startCli(args: string[], env: Record<string, string> = {}): RunningCli {
  const child = spawnChild(process.execPath, ['src/cli/main.ts', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return startCli(args, env).done;
}
