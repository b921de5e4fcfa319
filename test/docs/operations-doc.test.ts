// docs/configuration.md and docs/operations.md against the code: every setting src/kernel/config-schema.ts declares
// is in the one table of docs/configuration.md, every command of the CLI (as its --help lists them) has its
// `npm run cli -- ...` line in docs/operations.md, and what the table says DATA_DIR holds with DATABASE_URL is what
// the service writes there.
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { resolveSecretKeyring } from '../../src/webhooks/secrets/secret-keys.ts';
import { silentLogger } from '../support/api.ts';
import { execFileChild } from '../support/child-processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const OPERATIONS = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
const CONFIGURATION = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
const run = promisify(execFileChild);

/** The commands listed under "Commands:" in a --help text (without `help`). */
const commandsIn = (help: string): string[] =>
  [...(help.split(/^Commands:$/m)[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)/gm)]
    .map((m) => m[1]!)
    .filter((c) => c !== 'help');

describe('docs/configuration.md and docs/operations.md', () => {
  it('documents every setting src/kernel/config-schema.ts declares in docs/configuration.md', () => {
    const config = readFileSync(join(ROOT, 'src/kernel/config-schema.ts'), 'utf8');
    const settings = [...config.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(settings).to.include('DATABASE_URL').and.include('FEED_MAX_WAITERS');
    expect(
      settings.filter((name) => !CONFIGURATION.includes(`\`${name}\``)),
      'settings missing from docs/configuration.md',
    ).to.deep.equal([]);
  });

  it('has an `npm run cli -- ...` line for every command and subcommand of the CLI', async function () {
    this.timeout(120_000);
    const cli = (...args: string[]) =>
      run(process.execPath, [join(ROOT, 'src/cli/main.ts'), ...args, '--help'], {
        env: { ...process.env, LOG_LEVEL: 'silent' },
      });
    const missing: string[] = [];
    const commands = commandsIn((await cli()).stdout);
    const helps = await Promise.all(commands.map((command) => cli(command)));
    for (const [i, command] of commands.entries()) {
      const subcommands = commandsIn(helps[i]!.stdout);
      for (const full of subcommands.length ? subcommands.map((s) => `${command} ${s}`) : [command]) {
        const [group, sub] = full.split(' ');
        // `npm run cli -- group sub`, or a line listing the subcommands: `npm run cli -- group a | sub | b`.
        const line = OPERATIONS.split('\n').find(
          (l) =>
            l.includes(`npm run cli -- ${group}${sub ? ' ' : ''}`) &&
            (!sub || new RegExp(`(-- ${group}|\\|) ${sub}\\b`).test(l)),
        );
        if (!line) missing.push(full);
      }
    }
    expect(missing, 'commands missing from docs/operations.md').to.deep.equal([]);
  });

  it('is right that DATA_DIR is used with DATABASE_URL too (the generated secret key) when SECRET_ENCRYPTION_KEY is unset', async () => {
    expect(CONFIGURATION).to.match(/\| `DATA_DIR` \|[^\n]*also with `DATABASE_URL`[^\n]*`secret-key`/);
    const dataDir = await mkdtemp(join(tmpdir(), 'lods-datadir-'));
    try {
      await resolveSecretKeyring(
        { secretKeys: { key: undefined, previous: undefined }, dataDir, databaseUrl: 'postgresql://somewhere/lods' },
        silentLogger,
      );
      expect(await readdir(dataDir)).to.deep.equal(['secret-key']);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
