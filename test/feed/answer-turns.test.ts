// Long polls woken by one commit are answered a batch per pass of the event loop (feed/answer-turns.ts),
// so that a plain request that arrives meanwhile is read between batches, not after every answer.
import { expect } from 'chai';
import { answerTurns } from '../../src/feed/answer-turns.ts';
import { countLoopPasses } from '../support/loop-passes.ts';

const nextImmediate = () => new Promise((resolve) => setImmediate(resolve));

describe('long poll answers, a batch per turn', () => {
  it('lets nobody through in the caller’s own turn, then at most perTurn per turn, in the order they came', async () => {
    const turns = answerTurns(4);
    const released: number[] = [];
    const all = Promise.all(Array.from({ length: 10 }, (_, caller) => turns.take().then(() => released.push(caller))));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(released, 'before any turn').to.deep.equal([]);
    const batches: number[] = [];
    while (released.length < 10) {
      const before = released.length;
      await nextImmediate();
      batches.push(released.length - before);
    }
    await all;
    expect(released).to.deep.equal([...Array(10).keys()]);
    expect(batches.filter((n) => n > 0)).to.deep.equal([4, 4, 2]);
  });

  it('lets each batch through in a later pass of the event loop than the one before it (a poll phase between)', async () => {
    // Each batch comes in a pass of its own.
    const loop = countLoopPasses();
    const turns = answerTurns(4);
    const passes: number[] = [];
    await Promise.all(Array.from({ length: 50 }, () => turns.take().then(() => passes.push(loop.passes()))));
    loop.stop();
    const perPass = new Map<number, number>();
    for (const p of passes) perPass.set(p, (perPass.get(p) ?? 0) + 1);
    expect(Math.max(...perPass.values()), 'callers through in one pass').to.be.at.most(4);
    expect(perPass.size, 'passes taken').to.equal(13);
  });
});
