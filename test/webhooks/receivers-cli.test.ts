// The receiver commands that take a secret: --secret-file and --secret-stdin keep it out of ps and
// shell history (issue 7 item 12), rotate-secret replaces it, reencrypt moves every secret to the
// current key; none of them prints it.
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { TEST_SECRET_KEY, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { spawnChild } from '../support/child-processes.ts';

const FILE_SECRET = 'from-a-file-secret-3b8e1f0c5a7d';
const STDIN_SECRET = 'from-stdin-secret-9d2a6c4e8f1b';

function cli(
  args: string[],
  stdin = '',
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnChild(process.execPath, ['src/cli/main.ts', ...args], {
      env: {
        ...process.env,
        DATABASE_URL: testDb().url,
        LOG_LEVEL: 'silent',
        NODE_ENV: 'development',
        SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
        ...env,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
const signs = (secret: string, r: { headers: Record<string, unknown>; body: Buffer }) =>
  `sha256=${createHmac('sha256', secret)
    .update(`${String(r.headers['x-service-timestamp'])}.`)
    .update(r.body)
    .digest('hex')}`;

describe('receivers add / rotate-secret / reencrypt on the command line', function () {
  // Each test starts the CLI several times (about 1 s of CPU each): minutes on a loaded 2-core machine.
  this.timeout(180_000);
  const stack = useWebhookStack({ config: { maxAttempts: 1 } });
  let receiver: TestReceiver;
  let dir: string;
  before(async () => {
    receiver = await startReceiver();
    dir = await mkdtemp(join(tmpdir(), 'lods-secret-'));
  });
  after(async () => {
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keys create --scope receivers:manage grants the self-service scope', async () => {
    const created = await cli(['keys', 'create', '--name', 'team-hooks', '--scope', 'receivers:manage', '--json']);
    expect(created.code, created.stderr).to.equal(0);
    expect((JSON.parse(created.stdout) as { scopes: string[] }).scopes).to.deep.equal(['receivers:manage']);
  });

  it('--help of add and rotate-secret names --secret-file and --secret-stdin', async () => {
    for (const command of ['add', 'rotate-secret']) {
      const help = await cli(['receivers', command, '--help']);
      expect(help.stdout, command).to.include('--secret-file <file>').and.include('--secret-stdin');
    }
  });

  it('adds with --secret-file, rotates with --secret-stdin; deliveries are signed with each in turn', async () => {
    await writeFile(join(dir, 'secret'), `${FILE_SECRET}\n`, { mode: 0o600 });
    // A relative path is taken from where `npm run cli` was called (INIT_CWD), not from the package's root.
    const added = await cli(['receivers', 'add', '--url', receiver.url, '--secret-file', 'secret', '--json'], '', {
      INIT_CWD: dir,
    });
    expect(added.code, added.stderr).to.equal(0);
    const { id, hasSecret } = JSON.parse(added.stdout) as { id: string; hasSecret: boolean };
    expect(hasSecret).to.equal(true);
    const publish = async () => {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
    };
    await publish();
    const [first] = await receiver.waitFor(1);
    expect(first!.headers['x-service-signature']).to.equal(signs(FILE_SECRET, first!));

    const rotated = await cli(['receivers', 'rotate-secret', id, '--secret-stdin', '--json'], `${STDIN_SECRET}\n`);
    expect(rotated.code, rotated.stderr).to.equal(0);
    await publish();
    const [, second] = await receiver.waitFor(2);
    expect(second!.headers['x-service-signature']).to.equal(signs(STDIN_SECRET, second!));

    const reencrypted = await cli(['receivers', 'reencrypt', '--json']);
    expect(reencrypted.code, reencrypted.stderr).to.equal(0);
    expect(JSON.parse(reencrypted.stdout)).to.deep.include({ resealed: 0, underCurrentKey: 1 });
    for (const out of [added, rotated, reencrypted])
      expect(out.stdout + out.stderr)
        .to.not.include(FILE_SECRET)
        .and.not.include(STDIN_SECRET);
  });

  it('adds a receiver without a secret only with --unsigned (exit 2 otherwise), and warns when it does', async () => {
    const count = async () => (JSON.parse((await cli(['receivers', 'list', '--json'])).stdout) as unknown[]).length;
    const before = await count();
    const forgotten = await cli(['receivers', 'add', '--url', receiver.url]);
    expect(forgotten.code, forgotten.stderr).to.equal(2);
    expect(forgotten.stderr).to.match(/a signing secret is required: .*--unsigned/);
    const both = await cli(['receivers', 'add', '--url', receiver.url, '--unsigned', '--secret', FILE_SECRET]);
    expect(both.code, both.stderr).to.equal(2);
    expect(both.stderr).to.match(/--unsigned contradicts the secret/);
    expect(await count()).to.equal(before);

    const meant = await cli(['receivers', 'add', '--url', receiver.url, '--unsigned', '--json']);
    expect(meant.code, meant.stderr).to.equal(0);
    expect(JSON.parse(meant.stdout)).to.include({ hasSecret: false });
    expect(meant.stderr).to.match(/Warning: this receiver gets unsigned deliveries/);
    // The same command again: added (two receivers of one URL may be meant), and said.
    const again = await cli(['receivers', 'add', '--url', receiver.url, '--unsigned', '--json']);
    expect(again.code, again.stderr).to.equal(0);
    const first = (JSON.parse(meant.stdout) as { id: string }).id;
    // (Other tests of this file add receivers of this URL too: they are named as well.)
    expect(again.stderr).to.match(/Warning: receivers? .* already deliver/);
    expect(again.stderr).to.include(first).and.include('to this URL');
    await cli(['receivers', 'remove', first]);
    await cli(['receivers', 'remove', (JSON.parse(again.stdout) as { id: string }).id]);
  });

  it('says what is wrong with the URL, types or mode before asking for a secret (nothing added)', async () => {
    const count = async () => (JSON.parse((await cli(['receivers', 'list', '--json'])).stdout) as unknown[]).length;
    const before = await count();
    const cases: [string[], RegExp][] = [
      [['receivers', 'add', '--url', 'ftp://x'], /error: --url: must be an http or https URL/],
      [['receivers', 'add', '--url', receiver.url, '--type', 'NOPE'], /error: --type: unknown event type NOPE/],
      [
        ['receivers', 'add', '--url', receiver.url, '--mode', 'sometimes'],
        /error: --mode: must be all-events or latest-state/,
      ],
      // Every bad option at once, each named as the option given.
      [
        ['receivers', 'add', '--url', 'ftp://x', '--mode', 'sometimes', '--max-per-second', '0', '--view', 'q=x'],
        /error: --url: must be an http or https URL; --mode: .+; --max-per-second: .+; --view: /,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).to.equal(2);
      expect(result.stderr, args.join(' '))
        .to.match(message)
        .and.not.match(/secret/);
    }
    expect(await count()).to.equal(before);
  });

  it('refuses --grace-hours for an unsigned receiver because it has no old secret, secret given or not', async () => {
    const added = await cli(['receivers', 'add', '--url', receiver.url, '--unsigned', '--json']);
    const { id } = JSON.parse(added.stdout) as { id: string };
    for (const extra of [[], ['--secret', FILE_SECRET]]) {
      const refused = await cli(['receivers', 'rotate-secret', id, '--grace-hours', '2', ...extra]);
      expect(refused.code, refused.stderr).to.equal(2);
      expect(refused.stderr)
        .to.include(`--grace-hours is refused: receiver ${id} has no secret yet (its deliveries are unsigned)`)
        .and.not.match(/a secret is required|carries one signature/);
    }
    await cli(['receivers', 'remove', id]);
  });

  it('refuses two secret sources, none for rotate-secret, an unreadable file and an unknown id', async () => {
    const added = await cli(['receivers', 'add', '--url', receiver.url, '--secret', FILE_SECRET, '--json']);
    const serviceV1 = (JSON.parse(added.stdout) as { id: string }).id;
    const cases: [string[], number, RegExp][] = [
      [
        ['receivers', 'add', '--url', receiver.url, '--secret', FILE_SECRET, '--secret-stdin'],
        2,
        /give the secret once/,
      ],
      [['receivers', 'rotate-secret', serviceV1], 2, /a secret is required/],
      // Without a secret too, an unknown id is what is wrong.
      [['receivers', 'rotate-secret', '00000000-0000-4000-8000-000000000000'], 3, /was not found/],
      [
        ['receivers', 'add', '--url', receiver.url, '--secret-file', join(dir, 'missing')],
        2,
        /cannot read the secret from ".*\/missing": ENOENT/,
      ],
      [['receivers', 'add', '--url', receiver.url, '--secret-file', dir], 2, /is a directory, not a regular file/],
      // A device is never a stored secret (and an endless one must not be read whole).
      [
        ['receivers', 'add', '--url', receiver.url, '--secret-file', '/dev/zero'],
        2,
        /--secret-file \/dev\/zero is a device, not a regular file/,
      ],
      [
        ['receivers', 'rotate-secret', '00000000-0000-4000-8000-000000000000', '--secret', FILE_SECRET],
        3,
        /Receiver 00000000-0000-4000-8000-000000000000 was not found/,
      ],
      // An empty pipe (a secret manager that printed nothing) blamed --secret.
      [
        ['receivers', 'add', '--url', receiver.url, '--secret-stdin'],
        2,
        /^error: --secret-stdin: standard input was empty: give the secret there$/m,
      ],
      [
        ['receivers', 'add', '--url', receiver.url, '--secret-file', '-'],
        2,
        /^error: --secret-file -: standard input was empty/,
      ],
    ];
    for (const [args, code, message] of cases) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).to.equal(code);
      expect(result.stderr, args.join(' ')).to.match(message);
    }
  });

  it('refuses a FIFO with no writer at once (exit 2) instead of waiting on it forever', async () => {
    const fifo = join(dir, 'secret.fifo');
    expect(spawnSync('mkfifo', [fifo]).status, 'mkfifo').to.equal(0);
    const started = Date.now();
    const result = await cli(['receivers', 'add', '--url', receiver.url, '--secret-file', fifo]);
    expect(result.code, result.stderr).to.equal(2);
    expect(result.stderr).to.include(`--secret-file ${fifo} is a FIFO (named pipe), not a regular file`);
    expect(Date.now() - started).to.be.below(30_000);
  });

  it('--secret-file - reads standard input', async () => {
    const added = await cli(
      ['receivers', 'add', '--url', receiver.url, '--secret-file', '-', '--json'],
      `${FILE_SECRET}\n`,
    );
    expect(added.code, added.stderr).to.equal(0);
    expect((JSON.parse(added.stdout) as { hasSecret: boolean }).hasSecret).to.equal(true);
  });
});
