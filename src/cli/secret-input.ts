// A signing secret from exactly one of --secret S, --secret-file F or --secret-stdin. The file and
// stdin forms keep the secret out of `ps` and shell history; one trailing newline is dropped (what
// `echo` and editors add). At most READ_LIMIT bytes are read: a secret is at most 512 characters,
// and a mistaken source (/dev/zero, a large file) must not be read into memory whole.
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { type Command, Option } from 'commander';
import { CliError } from './run.ts';

export type SecretOptions = { secret?: string; secretFile?: string; secretStdin?: boolean };

export function addSecretOptions(command: Command, what: string): Command {
  return command
    .addOption(new Option('--secret <secret>', `${what} (16-512 printable ASCII characters, no spaces); visible in ps and shell history: prefer the next two`))
    .addOption(new Option('--secret-file <file>', `read the ${what} from a file (one trailing newline is ignored)`))
    .addOption(new Option('--secret-stdin', `read the ${what} from standard input (e.g. a pipe from a secret manager)`));
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
  const file = await open(path, 'r');
  try {
    return await readBounded(file.createReadStream({ autoClose: false, highWaterMark: READ_LIMIT }), `--secret-file ${path}`);
  } finally {
    await file.close();
  }
}

/** The secret given, undefined when none was (an error when `required`), or a CliError (exit 2). */
export async function readSecretOption(opts: SecretOptions, required: boolean): Promise<string | undefined> {
  const given = [opts.secret !== undefined, opts.secretFile !== undefined, opts.secretStdin === true].filter(Boolean).length;
  if (given > 1) throw new CliError('give the secret once: --secret, --secret-file or --secret-stdin', 2);
  if (given === 0) {
    if (required) throw new CliError('a secret is required: --secret-file F, --secret-stdin or --secret S', 2);
    return undefined;
  }
  if (opts.secret !== undefined) return opts.secret;
  let raw: string;
  try {
    raw = opts.secretFile !== undefined ? await readSecretFile(opts.secretFile) : await readBounded(process.stdin, 'standard input');
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read the secret: ${(error as NodeJS.ErrnoException).code ?? 'read error'}`, 2);
  }
  return raw.replace(/\r?\n$/, '');
}
