// The query class's slots count statements, not callers: a read answered at its deadline or on a
// disconnect keeps its slot until its statement has ended in PostgreSQL (db/deadline-reads.ts
// `ended`), so the limits hold in the database while a cancelled statement is stopping.
import { expect } from 'chai';
import { createQueryGate } from '../../src/kernel/query-gate.ts';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('query gate', () => {
  it("holds a read's slot until its statement has ended, though its caller was answered before", async () => {
    const gate = createQueryGate({ perKey: 1, total: 1, queueWaitMs: 2000 });
    const stopped = sleep(300);
    const given = gate
      .run(
        'k',
        () => Promise.reject(new Error('cancelled at its deadline')),
        undefined,
        () => stopped,
      )
      .catch((error: Error) => error.message);
    expect(await given).to.equal('cancelled at its deadline');
    const started = performance.now();
    // Another key: the process's one slot is still taken by the stopping statement.
    expect(await gate.run('other', async () => 'admitted')).to.equal('admitted');
    expect(performance.now() - started).to.be.at.least(250);
  });

  it('frees the slot at once when the read ends with its statement', async () => {
    const gate = createQueryGate({ perKey: 1, total: 1, queueWaitMs: 2000 });
    expect(
      await gate.run(
        'k',
        async () => 1,
        undefined,
        async () => {},
      ),
    ).to.equal(1);
    const started = performance.now();
    expect(await gate.run('k', async () => 2)).to.equal(2);
    expect(performance.now() - started, 'not after the 2 s wait in line').to.be.below(1000);
  });

  it("gives a freed slot to the waiting key that runs the fewest reads, though other keys' waiters came first", async () => {
    // Three keys asking for more than their two slots each, five slots in the process: first come,
    // first served, one of their waiters was always ahead of any other key's.
    const gate = createQueryGate({ perKey: 2, total: 5, queueWaitMs: 2000 });
    const order: string[] = [];
    const releases = new Map<string, (() => void)[]>();
    const ask = (keyId: string) =>
      gate.admit(keyId).then((release) => {
        order.push(keyId);
        releases.set(keyId, [...(releases.get(keyId) ?? []), release]);
      });
    const asked: Promise<void>[] = [];
    for (const keyId of ['a', 'b', 'c']) for (let i = 0; i < 4; i++) asked.push(ask(keyId));
    await sleep(10);
    expect(order).to.deep.equal(['a', 'a', 'b', 'b', 'c']);
    asked.push(ask('other'));
    await sleep(10);
    releases.get('a')!.shift()!(); // one slot frees
    await sleep(10);
    expect(order.at(-1), 'the key with no read running').to.equal('other');
    releases.get('b')!.shift()!(); // the next: every waiting key runs one read now, so the first come, a's
    await sleep(10);
    expect(order.at(-1)).to.equal('a');
    for (const keyId of ['a', 'b', 'c', 'other']) for (const release of releases.get(keyId) ?? []) release();
    for (let i = 0; i < 10; i++) {
      await sleep(5);
      for (const list of releases.values()) while (list.length) list.shift()!();
    }
    await Promise.all(asked);
  });
});
