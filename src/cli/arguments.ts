// Checks of command-line argument values shared by the commands (exit code 2 on a bad value).
import { resolve } from 'node:path';
import { CliError } from './run.ts';

/**
 * A file argument as an absolute path, a relative one taken from the directory the command was run
 * in: `npm run cli` runs it from the package's root, and says where it was called from in INIT_CWD.
 * (`--secret-file ./s` from a subdirectory read the root's ./s, or nothing.)
 */
export function callerPath(path: string): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), path);
}

/** A positive integer option (at most `max`), or a CliError with exit code 2. */
export function positiveInt(name: string, value: string, max = 999_999_999): number {
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new CliError(
      `${name} must be a positive integer${max < 999_999_999 ? ` (at most ${max})` : ''}, got "${value}"`,
      2,
    );
  }
  return Number(value);
}
