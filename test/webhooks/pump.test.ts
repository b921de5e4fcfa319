// The worker's fetch pump: wake-ups coalesce, a wake during a round brings exactly one more round,
// rounds never overlap, a round put off is brought forward when it is no longer held off, and stop
// waits for the running round and allows no other.
import { expect } from 'chai';
import { createPump } from '../../src/webhooks/delivery/pump.ts';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('delivery pump (state machine)', () => {
  it('runs one round for many wakes in one turn, one more for wakes during a round, never two at once', async () => {
    let rounds = 0;
    let running = 0;
    let release!: () => void;
    const pump = createPump(async () => {
      rounds += 1;
      running += 1;
      expect(running).to.equal(1);
      await new Promise<void>((resolve) => (release = resolve));
      running -= 1;
    });
    pump.wake();
    pump.wake();
    expect(pump.state()).to.equal('scheduled');
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([1, 'fetching']);
    pump.wake();
    pump.wake();
    expect(pump.state()).to.equal('fetchingAgain');
    release();
    await turn();
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([2, 'fetching']);
    release();
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([2, 'idle']);
  });

  it('stop waits for the round in progress and ignores later wakes', async () => {
    let rounds = 0;
    let finished = false;
    let release!: () => void;
    const pump = createPump(async () => {
      rounds += 1;
      await new Promise<void>((resolve) => (release = resolve));
      finished = true;
    });
    pump.wake();
    await turn();
    const stopped = pump.stop();
    pump.wake();
    setTimeout(() => release(), 20);
    await stopped;
    expect(finished).to.equal(true);
    pump.wake();
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([1, 'stopped']);
  });

  it('puts a round off while held off, and brings it forward at a wake that is not', async () => {
    let rounds = 0;
    let holdOff = 10_000;
    const pump = createPump(async () => void (rounds += 1), { holdOffMs: () => holdOff });
    pump.wake();
    await turn();
    pump.wake();
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([0, 'scheduled']);
    holdOff = 0;
    pump.wake();
    await turn();
    await turn();
    expect([rounds, pump.state()]).to.deep.equal([1, 'idle']);
  });

  it('runs a round put off when its time comes, and none after stop', async () => {
    let rounds = 0;
    const pump = createPump(async () => void (rounds += 1), { holdOffMs: () => 20 });
    pump.wake();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect([rounds, pump.state()]).to.deep.equal([1, 'idle']);
    pump.wake();
    await pump.stop();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect([rounds, pump.state()]).to.deep.equal([1, 'stopped']);
  });
});
