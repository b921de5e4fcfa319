// The consumer room (src/consumer/): the consumer-side tools, `walk` (the nightly full walk into a
// JSON-lines file, walk.ts) and `sync` (a JSON-lines copy kept current through the change feed,
// sync.ts), with the files they write (durable-files.ts, sync-files.ts, sync-copy.ts). They speak
// HTTP only, through @lods/client, and touch no database and nothing of the service's internals:
// they run from anywhere a consumer would. Their imports: node built-ins, @lods/client, and of src/
// only kernel/stop-signals.ts (sync's Ctrl-C and SIGTERM).
//
// The CLI registers them as commands (cli/walk.ts, cli/sync.ts: options, defaults, argument checks),
// passes them its progress output and prints what they return. This file holds what they share.

/**
 * A tool's failure with the exit code it calls for: 2 for what it refuses before its first request
 * (a file it could only fail on or damage), 1 for a failure of the service, 128 + n when stopped by
 * a signal. The CLI reports it as its own CliError.
 */
export class ConsumerError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Where a tool reports while it runs: a line per step (the CLI: stderr), then the end of those lines. */
export type Progress = { line: (message: string) => void; end: () => void };

/** What a tool returns: its summary (the CLI's --json output) and the same said for a person. */
export type ToolReport<Summary> = { summary: Summary; text: string };
