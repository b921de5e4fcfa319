// `npm test` hands mocha its files through test/suite-order.ts (the longest first): every test file
// exactly once, the listed ones that exist in front.
import { execFileSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import { suiteOrder } from '../suite-order.ts';

const REPO = resolve(import.meta.dirname, '../..');

describe('the order npm test runs the files in', () => {
  it('is every test file exactly once, the listed longest ones first', () => {
    const printed = execFileSync(process.execPath, ['test/suite-order.ts'], { cwd: REPO, encoding: 'utf8' })
      .trim()
      .split('\n');
    const files = globSync('test/**/*.test.ts', { cwd: REPO }).sort();
    expect([...printed].sort()).to.deep.equal(files);
    expect(new Set(printed).size).to.equal(printed.length);

    const { first } = suiteOrder(REPO);
    expect(first.length, 'names in the list that exist').to.be.greaterThan(10);
    expect(printed.slice(0, first.length)).to.deep.equal(first);
    expect(printed.slice(first.length)).to.deep.equal(files.filter((file) => !first.includes(file)));
  });
});
