// Checks of command-line argument values shared by the commands (exit code 2 on a bad value).
import { CliError } from './run.ts';

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
