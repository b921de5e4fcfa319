// The suite's end-of-file guard (support/left-open-connections.ts): a connection a file leaves open
// and its database's drop terminates is reported on stderr instead of ending the mocha worker; at
// any other time an 'error' nobody hears still throws.
import { expect } from 'chai';
import pg from 'pg';
import { testDb } from '../hooks.ts';
import { closingTestFile } from '../support/left-open-connections.ts';

async function captureStderr(run: () => Promise<void>): Promise<string> {
  const write = process.stderr.write.bind(process.stderr);
  let captured = '';
  process.stderr.write = ((chunk: string | Uint8Array) => {
    captured += chunk.toString();
    return true;
  }) as typeof process.stderr.write;
  try {
    await run();
  } finally {
    process.stderr.write = write;
  }
  return captured;
}

describe('connections a test file leaves open', () => {
  it('are reported with where they connected, not thrown, when the end of the file terminates them', async () => {
    const left = new pg.Client({ connectionString: testDb().url, application_name: 'left-open' });
    await left.connect();
    const ended = new Promise((resolve) => left.once('end', resolve));
    const stderr = await captureStderr(() =>
      closingTestFile(async () => {
        await testDb().pool.query(
          "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'left-open'",
        );
        await ended;
      }),
    );
    expect(stderr).to.match(/a pg client left open was ended with its test file's database \(terminating connection/);
    expect(stderr).to.include('left-open-connections.test.ts');
  });

  it('still throw at any other time', () => {
    const client = new pg.Client({ connectionString: testDb().url });
    expect(() => client.emit('error', new Error('nobody listens'))).to.throw('nobody listens');
  });
});
