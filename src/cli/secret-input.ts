// A signing secret from exactly one of --secret S, --secret-file F or --secret-stdin. The file and
// stdin forms keep the secret out of `ps` and shell history; one trailing newline is dropped (what
// `echo` and editors add).
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import { CliError } from './run.ts';

export type SecretOptions = { secret?: string; secretFile?: string; secretStdin?: boolean };

export function addSecretOptions(command: Command, what: string): Command {
  return command
    .addOption(new Option('--secret <secret>', `${what} (16-512 printable characters); visible in ps and shell history: prefer the next two`))
    .addOption(new Option('--secret-file <file>', `read the ${what} from a file (one trailing newline is ignored)`))
    .addOption(new Option('--secret-stdin', `read the ${what} from standard input (e.g. a pipe from a secret manager)`));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
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
    raw = opts.secretFile !== undefined ? await readFile(opts.secretFile, 'utf8') : await readStdin();
  } catch (error) {
    throw new CliError(`cannot read the secret: ${(error as NodeJS.ErrnoException).code ?? 'read error'}`, 2);
  }
  return raw.replace(/\r?\n$/, '');
}
