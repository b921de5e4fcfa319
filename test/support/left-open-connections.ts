// A connection a test file leaves open is ended by the file's root afterAll, which drops the file's
// database (DROP DATABASE ... WITH (FORCE)): the server sends "terminating connection due to
// administrator command" and pg emits it as 'error' on the client, or on its pool when the client was
// idle. With nothing listening, that ended the mocha worker with an uncaught error charged to the
// hook, failing a run whose tests had all passed. While the root hooks close a file's database, such
// an error is written to stderr with where the client connected, so that the leak can be found, and
// the worker goes on. At any other time nothing changes: an error nobody hears still fails the test
// that runs.
import pg from 'pg';

let closing = false;
const ended = new WeakSet<object>();
const CONNECTED_AT = Symbol('connectedAt');

type Emitter = { emit: (event: string | symbol, ...args: unknown[]) => boolean; listenerCount: (e: string) => number };

function guard(prototype: Emitter, what: string): void {
  const emit = prototype.emit;
  prototype.emit = function (this: Emitter & { [CONNECTED_AT]?: string }, event, ...args) {
    const error = args[0] as Error & { code?: string };
    // 57P01 admin_shutdown: the drop's termination, and the closed socket that follows it on the same
    // client; any other error is thrown as always.
    const terminated = error?.code === '57P01' || ended.has(this);
    if (event === 'error' && closing && terminated && this.listenerCount('error') === 0) {
      if (ended.has(this)) return true;
      ended.add(this);
      const client = (error as { client?: { [CONNECTED_AT]?: string } }).client ?? this;
      process.stderr.write(
        `a ${what} left open was ended with its test file's database (${error.message}); it connected ${client[CONNECTED_AT] ?? 'at an unknown place'}\n`,
      );
      return true;
    }
    return emit.call(this, event, ...args);
  };
}

const clientPrototype = pg.Client.prototype as unknown as Emitter & { connect: (...args: unknown[]) => unknown };
const connect = clientPrototype.connect;
clientPrototype.connect = function (this: { [CONNECTED_AT]?: string }, ...args: unknown[]) {
  this[CONNECTED_AT] = (new Error().stack ?? '').split('\n').slice(2, 8).join('\n');
  return connect.apply(this, args);
};
guard(clientPrototype, 'pg client');
guard(pg.Pool.prototype as unknown as Emitter, 'pg pool');

/** Runs `close` (the root hook's end of a file) with errors of connections left open reported, not thrown. */
export async function closingTestFile(close: () => Promise<void>): Promise<void> {
  closing = true;
  try {
    await close();
    // The terminated connections' messages may still be on their way.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    closing = false;
  }
}
