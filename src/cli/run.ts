// What every CLI command shares: configuration, a database for the duration of the command, output
// as text or --json, and errors mapped to exit codes.
import type { Config } from '../kernel/config.ts';
import { openDatabase, type Database } from '../app/database.ts';
import { type AppError, OperatorError, toAppError } from '../kernel/errors.ts';
import { createLogger, type Logger } from '../kernel/logger.ts';
import { ConsumerError } from '../consumer/consumer-tools.ts';

/** Exit codes: 0 ok, 1 failure, 2 bad arguments, 3 not found, 4 database unavailable, 5 conflict. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

const EXIT_BY_CODE: Partial<Record<AppError['code'], number>> = {
  BAD_USER_INPUT: 2,
  NOT_FOUND: 3,
  SERVICE_UNAVAILABLE: 4,
  INVALID_STATE_TRANSITION: 5,
};

/**
 * The message and exit code for anything a command throws; unknown errors keep their message. A bad
 * input that the running command takes as an option is named as that option (`--max-per-second`,
 * not the service's `maxPerSecond`): `options` are the command's long options.
 */
export function describeFailure(
  error: unknown,
  options: readonly string[] = [],
): { message: string; exitCode: number } {
  if (error instanceof CliError || error instanceof ConsumerError)
    return { message: error.message, exitCode: error.exitCode };
  const appError = toAppError(error);
  if (appError.code === 'INTERNAL_SERVER_ERROR')
    return { message: error instanceof Error ? error.message : String(error), exitCode: 1 };
  const params = appError.code === 'BAD_USER_INPUT' ? appError.invalidParams : undefined;
  const message = params?.length
    ? params.map((p) => `${optionNamed(p.name, options) ?? p.name}: ${p.reason}`).join('; ')
    : appError.message;
  return { message, exitCode: EXIT_BY_CODE[appError.code] ?? 1 };
}

// The service's input names whose option is not their kebab-case form.
const OPTION_OF: Record<string, string> = { signatureScheme: '--scheme' };

/** The option among `options` that gives the input `name`, if any. */
function optionNamed(name: string, options: readonly string[]): string | undefined {
  const option = OPTION_OF[name] ?? `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  return options.includes(option) ? option : undefined;
}

/** The CLI's logger: on stderr, so that stdout stays clean for --json output. */
export function cliLogger(config: Config): Logger {
  return createLogger({ level: config.cliLogLevel, destination: process.stderr });
}

/**
 * Runs `work` with an open database and closes it whatever happens. The database must exist and be
 * migrated: a command never creates or migrates one (only `migrate` and the service's start do).
 */
export async function withDatabase<T>(config: Config, work: (db: Database) => Promise<T>): Promise<T> {
  let db: Database;
  try {
    db = await openDatabase(config, cliLogger(config), { schema: 'current' });
  } catch (error) {
    // An OperatorError (database.ts) is already the sentence to print.
    const said =
      error instanceof OperatorError ? error.message : `cannot open the database: ${(error as Error).message}`;
    throw new CliError(said, 4);
  }
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

/** Prints `value` as JSON (with --json) or as the given human text. */
export function output(json: boolean | undefined, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

/** A simple aligned table for human output. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) =>
    columns.map((c) =>
      r[c] === null || r[c] === undefined ? '-' : Array.isArray(r[c]) ? (r[c] as unknown[]).join(',') : String(r[c]),
    ),
  );
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

/** Progress on stderr (so that --json stdout stays parseable). */
export function progress(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r${message}`);
  else process.stderr.write(`${message}\n`);
}

/** Ends a run of progress lines: on a terminal, moves on from the line progress() redraws. */
export function endProgress(): void {
  if (process.stderr.isTTY) process.stderr.write('\n');
}
