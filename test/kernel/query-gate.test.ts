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
  it('among equals, gives the slot to the key refused before: keys retrying together take turns', async () => {
    // Each round the slot is busy when k1, then k2 ask (their clients retry together after each 429,
    // in the same order); when it frees, one of them gets it and holds it past the other's wait.
    // First come among equals, k1 got it every round and k2 never did (found from outside).
    const gate = createQueryGate({ perKey: 1, total: 1, queueWaitMs: 200 });
    const admitted: string[] = [];
    for (let round = 0; round < 4; round++) {
      const busy = await gate.admit('busy');
      const tries = ['k1', 'k2'].map((keyId) =>
        gate.admit(keyId).then(
          (release) => {
            admitted.push(keyId);
            setTimeout(release, 400); // past the other's wait
          },
          () => {},
        ),
      );
      setTimeout(busy, 20);
      await Promise.all(tries);
      await sleep(450); // the slot free again
    }
    expect(admitted).to.deep.equal(['k1', 'k2', 'k1', 'k2']);
  });
});
