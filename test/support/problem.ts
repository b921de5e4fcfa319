// Assertions shared by every test of a non-2xx HTTP answer: RFC 7807 problem details that name
// what was wrong and leak nothing internal.
import { expect } from 'chai';

export type ProblemBody = {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  invalidParams?: { name: string; reason: string }[];
};

// What would betray internals: stack frames, file paths, SQL or driver messages.
const INTERNALS =
  /\bat [\w.<>]+ \(|node_modules|\.ts:\d+|\b(select|insert|update|delete)\b .*\b(from|into|set)\b|syntax error|violates|relation "|ECONN|pg_/i;

/** Asserts a problem+json answer with the given status; returns its parsed body. */
export function expectProblem(res: { status: number; headers: Headers; text: string }, status: number): ProblemBody {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  const body = JSON.parse(res.text) as ProblemBody;
  expect(body.status).to.equal(status);
  for (const member of ['type', 'title', 'detail', 'instance'] as const)
    expect(body[member], member).to.be.a('string').with.length.above(0);
  expect(res.text).not.to.match(INTERNALS);
  expect(body).not.to.have.any.keys('stack', 'sql', 'query');
  return body;
}

/** Asserts a 400 problem whose invalidParams name exactly `names` (each with a reason). */
export function expectInvalidParams(
  res: { status: number; headers: Headers; text: string },
  names: string[],
): ProblemBody {
  const body = expectProblem(res, 400);
  expect(body.invalidParams, 'invalidParams').to.be.an('array');
  expect(body.invalidParams!.map((p) => p.name).sort()).to.deep.equal([...names].sort());
  for (const p of body.invalidParams!) expect(p.reason).to.be.a('string').with.length.above(0);
  return body;
}
