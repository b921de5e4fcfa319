// `npm test` hands mocha its files through test/suite-order.ts (the longest first): every test file
// exactly once, whatever the list names, and the named ones that exist in front.
import { execFileSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { expect } from 'chai';

const REPO = resolve(import.meta.dirname, '../..');

describe('the order npm test runs the files in', () => {
  it('is every test file exactly once, the listed longest ones first', async () => {
    const printed = execFileSync(process.execPath, ['test/suite-order.ts'], { cwd: REPO, encoding: 'utf8' })
      .trim()
      .split('\n');
    const files = globSync('test/**/*.test.ts', { cwd: REPO }).sort();
    expect([...printed].sort()).to.deep.equal(files);
    expect(new Set(printed).size).to.equal(printed.length);

    const listed = [...(await readFile(resolve(REPO, 'test/suite-order.ts'), 'utf8')).matchAll(/^ {2}'(test\/.+)',$/gm)]
      .map((m) => m[1]!)
      .filter((file) => files.includes(file));
    expect(listed.length, 'names in the list that exist').to.be.greaterThan(10);
    expect(printed.slice(0, listed.length)).to.deep.equal(listed);
    expect(printed.slice(listed.length)).to.deep.equal(files.filter((file) => !listed.includes(file)));
  });
});
