// A signing secret from exactly one of --secret S, --secret-file F or --secret-stdin. The file and
// stdin forms keep the secret out of `ps` and shell history; one trailing newline is dropped (what
// `echo` and editors add). At most READ_LIMIT bytes are read: a secret is at most 512 characters,
// and a mistaken source (a large file) must not be read into memory whole. --secret-file takes only
// a regular file (or `-`, standard input): a FIFO with no writer would block forever, a device
// (/dev/zero, a terminal) is never a stored secret.
import { constants, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { type Command, Option } from 'commander';
import { callerPath } from './arguments.ts';
import { CliError } from './run.ts';

export type SecretOptions = { secret?: string; secretFile?: string; secretStdin?: boolean };

export function addSecretOptions(command: Command, what: string): Command {
  return command
    .addOption(
      new Option(
        '--secret <secret>',
        `${what} (16-512 printable ASCII characters, no spaces); visible in ps and shell history: prefer the next two`,
      ),
    )
    .addOption(
      new Option(
        '--secret-file <file>',
        `read the ${what} from a regular file, - for standard input (one trailing newline is ignored)`,
      ),
    )
    .addOption(
      new Option('--secret-stdin', `read the ${what} from standard input (e.g. a pipe from a secret manager)`),
    );
}

const READ_LIMIT = 4096;

/** The bytes of `source` up to READ_LIMIT; throws a CliError beyond it. */
async function readBounded(source: Readable, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size > READ_LIMIT) {
      source.destroy();
      throw new CliError(`${what} holds more than ${READ_LIMIT} bytes: a secret is 16-512 characters`, 2);
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readSecretFile(path: string): Promise<string> {
  if (path === '-') return await readBounded(process.stdin, 'standard input');
  // O_NONBLOCK: opening a FIFO does not wait for a writer; the type is checked on what was opened.
  const file = await open(callerPath(path), constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const kind = fileKind(await file.stat());
    if (kind)
      throw new CliError(
        `--secret-file ${path} is ${kind}, not a regular file: give a file holding the secret, or - (or --secret-stdin) for standard input`,
        2,
      );
    return await readBounded(
      file.createReadStream({ autoClose: false, highWaterMark: READ_LIMIT }),
      `--secret-file ${path}`,
    );
  } finally {
    await file.close();
  }
}

/** What a non-regular file is, in words; null for a regular file. */
function fileKind(stats: Stats): string | null {
  if (stats.isFile()) return null;
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

/** The secret given, undefined when none was (an error when `required`), or a CliError (exit 2). */
export async function readSecretOption(opts: SecretOptions, required: boolean): Promise<string | undefined> {
  const given = [opts.secret !== undefined, opts.secretFile !== undefined, opts.secretStdin === true].filter(
    Boolean,
  ).length;
  if (given > 1) throw new CliError('give the secret once: --secret, --secret-file or --secret-stdin', 2);
  if (given === 0) {
    if (required) throw new CliError('a secret is required: --secret-file F, --secret-stdin or --secret S', 2);
    return undefined;
  }
  if (opts.secret !== undefined) return opts.secret;
  let raw: string;
  try {
    raw =
      opts.secretFile !== undefined
        ? await readSecretFile(opts.secretFile)
        : await readBounded(process.stdin, 'standard input');
  } catch (error) {
    if (error instanceof CliError) throw error;
    const from = opts.secretFile !== undefined ? ` from ${JSON.stringify(opts.secretFile)}` : ' from standard input';
    throw new CliError(`cannot read the secret${from}: ${(error as NodeJS.ErrnoException).code ?? 'read error'}`, 2);
  }
  const secret = raw.replace(/\r?\n$/, '');
  // Said of where it came from: an empty pipe (a secret manager that printed nothing) was reported as a bad --secret.
  if (secret === '')
    throw new CliError(
      `${opts.secretFile !== undefined ? `--secret-file ${opts.secretFile}` : '--secret-stdin'}: ${opts.secretFile === undefined || opts.secretFile === '-' ? 'standard input' : 'the file'} was empty: give the secret there`,
      2,
    );
  return secret;
}
