// The worker's per-receiver limit and prefetch (pure, no database).
import { expect } from 'chai';
import { createReceiverQueues } from '../../src/webhooks/delivery/receiver-queues.ts';

const GROUP_FACTOR = 32;

type Item = { receiver: string; n: number };
const items = (receiver: string, count: number, from = 0): Item[] =>
  Array.from({ length: count }, (_, i) => ({ receiver, n: from + i }));
const make = (limit = 2, budgetMs = 1000) =>
  createReceiverQueues<Item>({ limit, groupFactor: GROUP_FACTOR, budgetMs, receiverOf: (i) => i.receiver });
const drain = (q: ReturnType<typeof make>) => {
  const out: Item[] = [];
  for (let item = q.next(); item; item = q.next()) out.push(item);
  return out;
};

describe('receiver queues (per-receiver concurrency and prefetch)', () => {
  it('never hands out more than the limit per receiver at once, and takes receivers in turn', () => {
    const q = make(2);
    expect(q.accept([...items('a', 4), ...items('b', 4)])).to.deep.equal([]);
    const first = drain(q);
    expect(first.map((i) => i.receiver).toSorted()).to.deep.equal(['a', 'a', 'b', 'b']);
    expect(q.next()).to.equal(undefined);
    q.done('a', 5, false);
    expect(q.next()).to.deep.equal({ receiver: 'a', n: 2 });
    expect(q.next()).to.equal(undefined);
  });

  it('queues a small prefetch for an unknown receiver, more for a fast one, none beyond the limit for a slow one', () => {
    const q = make(2, 1000);
    expect(q.accept(items('new', 10))).to.have.length(10 - 4); // limit + limit
    const fast = make(2, 1000);
    fast.accept(items('f', 1));
    fast.next();
    fast.done('f', 10, false); // 10 ms: room for 2 + 2 * 1000 / 10, capped
    expect(fast.accept(items('f', 100))).to.have.length(100 - 2 * GROUP_FACTOR);
    const slow = make(2, 1000);
    slow.accept(items('s', 1));
    slow.next();
    slow.done('s', 900, false); // 900 ms: 2 + floor(2000 / 900) = 4
    expect(slow.accept(items('s', 10))).to.have.length(6);
  });

  it("hands a receiver's queue back when it times out or is slower than the budget", () => {
    const q = make(1, 500);
    q.accept(items('r', 2));
    expect(q.next()).to.deep.equal({ receiver: 'r', n: 0 });
    expect(q.queued()).to.equal(1);
    expect(q.done('r', 600, false)).to.deep.equal([{ receiver: 'r', n: 1 }]);
    expect([q.held(), q.queued()]).to.deep.equal([0, 0]);
    q.accept(items('t', 2));
    q.next();
    expect(q.done('t', 20, true), 'a timeout or refused connection').to.deep.equal([{ receiver: 't', n: 1 }]);
  });

  it('lists receivers with no room, for the fetch to leave out, and gives everything back on stop', () => {
    const q = make(1, 1000);
    q.accept([...items('a', 2), ...items('b', 1)]);
    expect(q.full()).to.deep.equal(['a']);
    expect(q.queued()).to.equal(3);
    expect(
      q
        .takeAll()
        .map((i) => i.receiver)
        .toSorted(),
    ).to.deep.equal(['a', 'a', 'b']);
    expect([q.held(), q.queued()]).to.deep.equal([0, 0]);
  });
});
