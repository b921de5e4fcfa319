// Long polls woken by one commit are answered a batch per turn of the event loop (feed/answer-turns.ts),
// so that a plain request that arrives meanwhile is read between batches, not after every answer.
import { expect } from 'chai';
import { answerTurns } from '../../src/feed/answer-turns.ts';

describe('long poll answers, a batch per turn', () => {
  it('lets at most perTurn callers through in one turn of the event loop, in the order they came', async () => {
    // A ticker that runs once per turn (an immediate set from an immediate runs in the next turn).
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const turns = answerTurns(4);
    const released: Array<{ caller: number; turn: number }> = [];
    await Promise.all(
      Array.from({ length: 50 }, (_, caller) => turns.take().then(() => released.push({ caller, turn }))),
    );
    ticking = false;
    expect(released.map((r) => r.caller)).to.deep.equal([...Array(50).keys()]);
    const perTurn = new Map<number, number>();
    for (const r of released) perTurn.set(r.turn, (perTurn.get(r.turn) ?? 0) + 1);
    expect(Math.max(...perTurn.values()), 'callers through in one turn').to.be.at.most(4);
    expect(perTurn.size, 'turns taken').to.be.at.least(13);
  });

  it('lets a caller through at once when the turn has room, and starts counting again next turn', async () => {
    const turns = answerTurns(2);
    let through = 0;
    for (let i = 0; i < 3; i++) void turns.take().then(() => through++);
    await Promise.resolve();
    expect(through, 'in the same turn').to.equal(2);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(through, 'a turn later').to.equal(3);
    // Nothing queued and a new turn: through at once again.
    await new Promise((resolve) => setImmediate(resolve));
    let later = false;
    void turns.take().then(() => (later = true));
    await Promise.resolve();
    expect(later).to.equal(true);
  });
});
