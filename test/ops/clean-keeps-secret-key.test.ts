// `npm run clean` with DATABASE_URL set: DATA_DIR's generated secret-key seals that database's
// receiver secrets (no SECRET_ENCRYPTION_KEY outside production), and clean does not touch that
// database, so the key stays; removing it made the next start or migrate on it refuse for good.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { privateClone } from '../support/private-clone.ts';
import { execFileChild } from '../support/child-processes.ts';

// From a clone of its own: as root, clean also removes the checkout's staged PostgreSQL binaries,
// which other tests of this checkout start clusters from at the same time.
let clone = '';

function clean(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFileChild(
      'npm',
      ['run', '--silent', 'clean'],
      { cwd: join(clone, 'p'), env: { ...process.env, SECRET_ENCRYPTION_KEY: '', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe('npm run clean and the secret key of a DATABASE_URL database', function () {
  this.timeout(60_000);
  let data: string;
  before(async () => {
    clone = await privateClone();
  });
  after(async () => {
    await rm(clone, { recursive: true, force: true });
  });
  beforeEach(async () => {
    data = await mkdtemp(join(tmpdir(), 'lods-clean-key-'));
    await writeFile(join(data, 'secret-key'), 'key-sealing-that-database\n', { mode: 0o600 });
  });
  afterEach(async () => {
    await rm(data, { recursive: true, force: true });
  });

  it('keeps DATA_DIR/secret-key when DATABASE_URL is set, and says why', async () => {
    const run = await clean({ DATA_DIR: data, DATABASE_URL: 'postgres://lods@db.invalid:5432/lods' });
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    expect(readFileSync(join(data, 'secret-key'), 'utf8')).to.equal('key-sealing-that-database\n');
    expect(run.stdout).to.include(`kept ${join(data, 'secret-key')}: with DATABASE_URL set`);
  });

  it('removes it without DATABASE_URL (the embedded default, whose cluster goes too)', async () => {
    const run = await clean({ DATA_DIR: data, DATABASE_URL: '' });
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    expect(existsSync(join(data, 'secret-key'))).to.equal(false);
  });
});
