// The in-process queue per record id in front of the writers' transactions (catalog/id-gate.ts).
import { expect } from 'chai';
import { createIdGate } from '../../src/catalog/id-gate.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('id gate', () => {
  it('lets one call at a time hold an id, in arrival order, others through at once, and forgets ids left', async () => {
    const gate = createIdGate();
    const order: string[] = [];
    const run = async (name: string, ids: string[]) => {
      const leave = await gate.enter(ids);
      order.push(`${name} in`);
      await tick();
      order.push(`${name} out`);
      leave();
    };
    await Promise.all([run('a', ['x', 'y']), run('b', ['y']), run('c', ['z']), run('d', ['x'])]);
    // c shares nothing: it does not wait; b and d each wait for a; b came before d.
    expect(order.slice(0, 2)).to.deep.equal(['a in', 'c in']);
    expect(order.indexOf('b in')).to.be.greaterThan(order.indexOf('a out'));
    expect(order.indexOf('d in')).to.be.greaterThan(order.indexOf('a out'));
    expect(gate.size()).to.equal(0);
  });

  it('two calls over the same ids in opposite orders do not wait for each other forever', async () => {
    const gate = createIdGate();
    const hold = async (ids: string[]) => {
      const leave = await gate.enter(ids);
      await tick();
      leave();
    };
    const both = Promise.all([hold(['p', 'q']), hold(['q', 'p']), hold(['q', 'p', 'q'])]);
    const outcome = await Promise.race([
      both.then(() => 'done'),
      new Promise((r) => setTimeout(() => r('stuck'), 1000)),
    ]);
    expect(outcome).to.equal('done');
    expect(gate.size()).to.equal(0);
  });
});
