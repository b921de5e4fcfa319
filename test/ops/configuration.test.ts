// The settings as an operator gets them wrong: every refusal names the setting and the value it got,
// in words (not zod's "expected number, received NaN").
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/kernel/config.ts';

/** The problems loadConfig lists for `env`. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return expect.fail(`accepted ${JSON.stringify(env)}`);
}

describe('refusals of invalid settings', () => {
  it('names a numeric setting, its range and the value given (PORT=abc)', () => {
    expect(problemsOf({ PORT: 'abc' })).to.deep.equal(['PORT: must be an integer 0-65535, got "abc"']);
    expect(problemsOf({ PORT: '70000' })).to.deep.equal(['PORT: must be an integer 0-65535, got "70000"']);
  });

  it('words every numeric setting alike and lists them all at once', () => {
    expect(problemsOf({ DB_POOL_MAX: '1.5', WEBHOOK_TIMEOUT_MS: '10s', FEED_MAX_WAITERS: '-1' })).to.deep.equal([
      'DB_POOL_MAX: must be an integer 1-200, got "1.5"',
      'WEBHOOK_TIMEOUT_MS: must be an integer 100-120000, got "10s"',
      'FEED_MAX_WAITERS: must be an integer 0-100000, got "-1"',
    ]);
  });

  it('takes decimal digits only: a blank, an exponent, hex or a decimal point is refused, surrounding spaces are not', () => {
    // PORT=" " bound a random port (Number(" ") is 0); 1e3, 0x0D49 and 5.0 passed as integers.
    for (const raw of [' ', '1e3', '0x0D49', '5.0', '+80', '3 000'])
      expect(problemsOf({ PORT: raw }), raw).to.deep.equal([
        `PORT: must be an integer 0-65535, got ${JSON.stringify(raw)}`,
      ]);
    expect(loadConfig({ PORT: ' 8080 ' }).port).to.equal(8080);
  });

  it('lists every pair of settings that cannot go together at once', () => {
    expect(
      problemsOf({
        WEBHOOK_BACKOFF_BASE_MS: '5000',
        WEBHOOK_BACKOFF_MAX_MS: '1000',
        HTTP_HEADERS_TIMEOUT_MS: '60000',
        REQUEST_TIMEOUT_MS: '30000',
      }),
    ).to.deep.equal([
      'WEBHOOK_BACKOFF_MAX_MS: must be >= WEBHOOK_BACKOFF_BASE_MS',
      'HTTP_HEADERS_TIMEOUT_MS: must be <= REQUEST_TIMEOUT_MS (the headers are part of the request)',
    ]);
  });

  it('times the headers out by REQUEST_TIMEOUT_MS when it is shorter than their default, and closes idle connections', () => {
    // REQUEST_TIMEOUT_MS=5000 alone was refused, naming HTTP_HEADERS_TIMEOUT_MS, which was never set.
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '5000' }).http).to.include({
      requestTimeoutMs: 5000,
      headersTimeoutMs: 5000,
    });
    expect(loadConfig({}).http).to.include({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000 });
    // 0 reached Node as "no timeout": idle connections were never closed.
    expect(problemsOf({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' })).to.deep.equal([
      'HTTP_KEEP_ALIVE_TIMEOUT_MS: must be an integer 1-600000, got "0"',
    ]);
  });

  it('refuses a GraphQL body limit that the body pace could never take', () => {
    // 20 kB bodies at 1 KiB/s after a 1 KiB burst were answered 429 however long their key waited.
    const pace = { GRAPHQL_BODY_BYTES_PER_SECOND: '1024', GRAPHQL_BODY_BURST_BYTES: '1024' };
    expect(problemsOf({ ...pace, GRAPHQL_MAX_BODY_BYTES: '20000' })).to.deep.equal([
      'GRAPHQL_MAX_BODY_BYTES: must be at most GRAPHQL_BODY_BURST_BYTES + 10 s of GRAPHQL_BODY_BYTES_PER_SECOND (11264): a larger body would wait longer than the pace lets a body wait, and be refused every time',
    ]);
    expect(loadConfig({ ...pace, GRAPHQL_MAX_BODY_BYTES: '11264' }).http.graphqlMaxBodyBytes).to.equal(11264);
    // The defaults take the largest limit the setting allows.
    expect(loadConfig({ GRAPHQL_MAX_BODY_BYTES: String(50 * 1024 * 1024) }).http.graphqlMaxBodyBytes).to.equal(
      50 * 1024 * 1024,
    );
  });

  it('keeps the long polls below the connection cap: half of it by default, refused at or above it', () => {
    expect(loadConfig({}).feed).to.deep.equal({ maxWaiters: 512, maxWaitersPerKey: 51 });
    expect(loadConfig({ HTTP_MAX_CONNECTIONS: '100' }).feed.maxWaiters).to.equal(50);
    expect(loadConfig({ FEED_MAX_WAITERS: '900' }).feed).to.deep.equal({ maxWaiters: 900, maxWaitersPerKey: 90 });
    expect(problemsOf({ FEED_MAX_WAITERS: '1024' })).to.deep.equal([
      'FEED_MAX_WAITERS: must be below HTTP_MAX_CONNECTIONS (1024): waiting long polls hold their connections, and every other request needs one',
    ]);
  });

  it('names the accepted words and the value given for a choice', () => {
    expect(problemsOf({ ROLE: 'workers', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' })).to.deep.equal([
      'ROLE: must be one of all, api, worker, got "workers"',
      'WEBHOOK_ALLOW_PRIVATE_TARGETS: must be one of true, false, 1, 0, got "yes"',
    ]);
    // A misspelt production ran as development (no encryption key required, a demo key made).
    expect(problemsOf({ NODE_ENV: 'prod' })).to.deep.equal([
      'NODE_ENV: must be one of production, development, test, got "prod"',
    ]);
  });

  it('says what a database URL must be, without repeating it (it may hold a password)', () => {
    for (const url of ['mysql://root:hunter2@db/x', 'notaurl'])
      expect(problemsOf({ DATABASE_URL: url }), url).to.deep.equal([
        'DATABASE_URL: must be a postgres:// or postgresql:// URL',
      ]);
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:p@db:5432/x' }).databaseUrl).to.equal(
      'postgresql://u:p@db:5432/x',
    );
    // A postgres URL that does not parse (no host before the port, a port that is no number) is said as such.
    for (const url of ['postgresql://user:pw@:5432/db', 'postgresql://u:p@db:notaport/x'])
      expect(problemsOf({ DATABASE_URL: url }), url).to.deep.equal([
        'DATABASE_URL: is not a valid URL: postgresql://user:password@host:5432/database (a host is required; @ : / % in the user or password written %40 %3A %2F %25)',
      ]);
    // A bare "%" (a password's) stopped the start with a URIError and its stack.
    expect(problemsOf({ DATABASE_URL: 'postgresql://u:50%off@db:5432/x' })).to.deep.equal([
      'DATABASE_URL: holds a "%" that is not percent-encoding of UTF-8 text: write a "%" in the password or name as %25',
    ]);
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:50%25off@db:5432/x' }).databaseUrl).to.include('50%25off');
    // No host: refused as a setting, not found out by the first connection.
    for (const url of ['postgres://', 'postgresql:///x'])
      expect(problemsOf({ DATABASE_URL: url }), url).to.deep.equal([
        'DATABASE_URL: must name a host: postgresql://user:password@host:5432/database (or ?host= a socket directory)',
      ]);
    expect(loadConfig({ DATABASE_URL: 'postgresql:///x?host=/var/run/postgresql' }).databaseUrl).to.equal(
      'postgresql:///x?host=/var/run/postgresql',
    );
  });

  it('still takes what it took: integers, defaults, empty values as unset', () => {
    const config = loadConfig({ PORT: '8080', DB_POOL_MAX: '', ROLE: 'api' });
    expect([config.port, config.db.poolMax, config.role]).to.deep.equal([8080, 10, 'api']);
    expect(loadConfig({}).port).to.equal(3000);
  });
});
