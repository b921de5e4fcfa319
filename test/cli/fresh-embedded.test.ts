// A command run where no embedded PostgreSQL is (another directory than the service's checkout, no
// DATABASE_URL): it starts a new, empty cluster there, and says so, once; `keys list` answered
// "(none)" as if the service's keys were gone.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';

const CLI = resolve(import.meta.dirname, '../../src/cli/main.ts');

function keysList(cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development' };
  for (const name of ['DATABASE_URL', 'DATA_DIR', 'LOG_LEVEL']) delete env[name];
  return new Promise((done) =>
    execFile(process.execPath, [CLI, 'keys', 'list'], { cwd, env }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe('a command with no DATABASE_URL outside the checkout', function () {
  this.timeout(90_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lods-cli-elsewhere-'));
    await chmod(dir, 0o755); // a directory PostgreSQL can reach: the cluster stays under it
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('says it started a new, empty embedded PostgreSQL, naming DATA_DIR; the next run uses it without a word', async () => {
    const first = await keysList(dir);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout.trim()).to.equal('(none)');
    const notice = first.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; dataDir?: string })
      .find((entry) => entry.msg.startsWith('no DATABASE_URL, and no embedded PostgreSQL in DATA_DIR yet'));
    expect(notice?.dataDir, first.stderr).to.equal(join(dir, '.data'));
    const second = await keysList(dir);
    expect(second.code, second.stderr).to.equal(0);
    expect(second.stderr).not.to.include('no embedded PostgreSQL');
  });
});
