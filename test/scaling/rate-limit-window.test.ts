// The rate limit's window slides (issue 18 item 7): no 60 s interval admits more than the key's
// limit, a burst straddling a clock minute gets the limit once (the fixed clock-minute window gave
// it twice), and the headers tell the truth: a refusal's Retry-After is when a request is admitted
// again. The limiter runs on a clock the test moves (minutes pass in milliseconds) and shares its
// counts through the test's real database.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { createApiKey, type Principal } from '../../src/auth/api-keys.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { createRateLimiter, type RateLimiter } from '../../src/http/rate-limit.ts';
import { testDb } from '../hooks.ts';
import { silentLogger } from '../support/api.ts';

type Answer = { admitted: boolean; remaining: number; resetS: number; retryAfterS: number | null };

function ask(limiter: RateLimiter, principal: Principal): Answer {
  const res = new ServerResponse(new IncomingMessage(new Socket()));
  let admitted = true;
  let retryAfterS: number | null = null;
  try {
    limiter.admit(principal, res);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'RATE_LIMITED') throw error;
    admitted = false;
    retryAfterS = Number(error.headers['Retry-After']);
  }
  const [, r, t] = /^"default";r=(\d+);t=(\d+)$/.exec(String(res.getHeader('RateLimit')))!;
  return { admitted, remaining: Number(r), resetS: Number(t), retryAfterS };
}

describe('rate limit window', () => {
  let clock = 0;
  const limiters: RateLimiter[] = [];
  const limiter = () => {
    const made = createRateLimiter({
      pool: testDb().pool,
      perMinute: 10,
      syncMs: 60_000,
      logger: silentLogger,
      now: () => clock,
    });
    limiters.push(made);
    return made;
  };
  const principal = async (rateLimit: number): Promise<Principal> => {
    const { id } = await createApiKey(testDb().orm.em.fork(), { name: 'window', scopes: ['catalog:read'], rateLimit });
    return { keyId: id, scopes: new Set(['catalog:read']), rateLimit };
  };
  after(async () => {
    for (const l of limiters) await l.stop();
  });

  it('admits a burst straddling a minute boundary once, not twice', async () => {
    const limit = 20;
    const key = await principal(limit);
    const rl = limiter();
    const minute = Date.UTC(2026, 10, 25, 19, 0, 0);
    clock = minute - 500; // half a second before :00
    const before = Array.from({ length: limit }, () => ask(rl, key));
    expect(before.every((a) => a.admitted)).to.equal(true);
    expect(before.at(-1)!.remaining).to.equal(0);
    clock = minute + 500; // a second later, in the next clock minute
    const after = Array.from({ length: limit }, () => ask(rl, key));
    expect(after.filter((a) => a.admitted)).to.have.length(0);
    // Truthful: the refusal names when the burst leaves the window, 59 s from here.
    expect(after[0]!.retryAfterS).to.equal(59);
    expect(after[0]!.remaining).to.equal(0);
    clock = minute + 59_000;
    expect(ask(rl, key).admitted).to.equal(false);
    clock = minute - 500 + 60_000;
    expect(ask(rl, key).admitted).to.equal(true);
  });

  it('never admits more than the limit in any 60 s interval, keeps up with the limit, and a Retry-After is when the next request gets in', async () => {
    const limit = 30;
    const key = await principal(limit);
    const rl = limiter();
    const start = Date.UTC(2026, 10, 25, 20, 0, 0) - 7_300;
    const admittedAt: number[] = [];
    let honoured = 0;
    // A client sending a request every 250 ms for five minutes, with a 3 s pause every 7th request;
    // when refused, it waits what Retry-After says.
    let sent = 0;
    for (clock = start; clock < start + 300_000; clock += ++sent % 7 === 0 ? 3_000 : 250) {
      const answer = ask(rl, key);
      if (answer.admitted) {
        admittedAt.push(clock);
        continue;
      }
      const waitS = answer.retryAfterS!;
      expect(waitS).to.be.within(1, 60);
      expect(answer.resetS).to.equal(waitS);
      // A second before Retry-After it is still refused; at Retry-After it gets in.
      clock += (waitS - 1) * 1000;
      expect(ask(rl, key).admitted, `${waitS - 1} s after a Retry-After of ${waitS}`).to.equal(false);
      clock += 1000;
      expect(ask(rl, key).admitted, `at Retry-After ${waitS}`).to.equal(true);
      admittedAt.push(clock);
      honoured++;
    }
    expect(honoured).to.be.above(0);
    for (let i = 0; i < admittedAt.length; i++) {
      const inInterval = admittedAt.filter((t) => t >= admittedAt[i]! && t < admittedAt[i]! + 60_000).length;
      expect(inInterval, `60 s from ${admittedAt[i]! - start} ms`).to.be.at.most(limit);
    }
    // Not a stingier limit either: five minutes and a few seconds admit about five times the limit.
    expect(admittedAt.length).to.be.within(4 * limit, 6 * limit);
  });
});
