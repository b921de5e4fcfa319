// The operator command line as a user runs it: a child process (Node 24) on the suite's database,
// logs silenced, the suite's secret key; the exit code, stdout and stderr come back.
import { resolve } from 'node:path';
import { testDb } from '../hooks.ts';
import { execFileChild } from './child-processes.ts';
import { TEST_SECRET_KEY } from './webhooks.ts';

const CLI = resolve(import.meta.dirname, '../../src/cli/main.ts');

export type CliRun = { code: number; stdout: string; stderr: string };

export function cli(...args: string[]): Promise<CliRun> {
  return new Promise((done) => {
    execFileChild(
      process.execPath,
      [CLI, ...args],
      {
        env: {
          ...process.env,
          DATABASE_URL: testDb().url,
          LOG_LEVEL: 'silent',
          NODE_ENV: 'development',
          SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
        },
      },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

export const json = <T>(stdout: string): T => JSON.parse(stdout) as T;
