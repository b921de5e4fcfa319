// Checks of command-line argument values shared by the commands (exit code 2 on a bad value).
import { CliError } from './run.ts';

export function positiveInt(name: string, value: string): number {
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new CliError(`${name} must be a positive integer, got "${value}"`, 2);
  return Number(value);
}
