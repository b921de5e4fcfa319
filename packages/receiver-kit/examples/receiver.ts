// A runnable webhook receiver built on the receiver kit: `npm run example:receiver`.
// It keeps a local copy of the catalog in a JSON file: snapshot events upsert `data` by resource.id,
// DELETED removes it, and so does LEFT_VIEW (for a receiver registered with a view, `receivers add
// --view`, whose copy holds the records of its view: an update took the record out of it). Each
// verified event is first appended to an inbox (the raw event stored before the 2xx); the file store
// is updated after the response, and the inbox is replayed at start so that nothing acknowledged is
// lost if the process dies in between. The recipe of the kit's README:
// de-duplicate (webhookReceiver, on the event id), compare versions (applyEvent with a version store:
// an event not newer than the resource's last applied version is dropped, a deleted record's version
// is kept as a tombstone), apply, acknowledge. The versions are saved in the same file as the records,
// so the two never disagree after a crash.
//
// Both signature schemes are verified, told apart by the delivery's headers (the kit does it): a
// service-v1 receiver's x-service-signature and a standard-webhooks receiver's webhook-signature
// (WEBHOOK_SECRET is then the whsec_ secret `receivers add --scheme standard-webhooks` printed).
//
// Environment: PORT (4000), HOST (127.0.0.1), WEBHOOK_SECRET (required), WEBHOOK_SECRET_PREVIOUS (also
// accepted, during a rotation), WEBHOOK_ALLOW_UNSIGNED=1 (start without a secret and accept unsigned
// deliveries: for a receiver registered without one), RECEIVER_STORE_PATH (where the store goes; by
// default example-receiver.json in a directory of the user's own in the OS temp dir, defaultStorePath:
// outside the checkout, so it is neither in the service's DATA_DIR, .data, nor in `npm run clean`'s way).
import { appendFile, lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import express from 'express';
import {
  applyEvent,
  type LearningOpportunitySnapshot,
  MemoryVersionStore,
  type VersionSnapshot,
  type WebhookEvent,
  webhookReceiver,
} from '@lods/receiver-kit';

export type StoreState = {
  records: Record<string, LearningOpportunitySnapshot>;
  /** The last resource.version applied per resource (tombstones for deleted records), MemoryVersionStore's snapshot. */
  versions: VersionSnapshot;
};
export type ApplyOutcome = 'upserted' | 'deleted' | 'stale';

/** Upserts or removes the record (no version check: applyEvent does that). */
function applyToRecords(records: StoreState['records'], event: WebhookEvent): ApplyOutcome {
  const id = event.resource.id;
  if (event.type === 'LEARNING_OPPORTUNITY_DELETED' || event.type === 'LEARNING_OPPORTUNITY_LEFT_VIEW') {
    delete records[id];
    return 'deleted';
  }
  records[id] = event.data;
  return 'upserted';
}

/** The JSON file store, its inbox of accepted events, and at most one write of the file in flight. */
export class JsonFileStore {
  readonly path: string;
  readonly inboxPath: string;
  state: StoreState = { records: {}, versions: {} };
  versions = new MemoryVersionStore();
  #writing: Promise<void> | null = null;
  #dirty = false;

  constructor(path: string) {
    this.path = resolve(path);
    this.inboxPath = `${this.path}.inbox.jsonl`;
  }

  /** Loads the file, replays events accepted but maybe not applied before a stop, then empties the inbox. */
  async open(): Promise<number> {
    await mkdir(dirname(this.path), { recursive: true });
    const text = await readFile(this.path, 'utf8').catch((e: NodeJS.ErrnoException) =>
      e.code === 'ENOENT' ? null : Promise.reject(e),
    );
    if (text) this.state = { records: {}, versions: {}, ...(JSON.parse(text) as Partial<StoreState>) };
    this.versions = new MemoryVersionStore({}, this.state.versions);
    const inbox = await readFile(this.inboxPath, 'utf8').catch((e: NodeJS.ErrnoException) =>
      e.code === 'ENOENT' ? '' : Promise.reject(e),
    );
    const pending = inbox
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as WebhookEvent);
    for (const event of pending) await applyEvent(this.versions, event, (e) => applyToRecords(this.state.records, e));
    await this.#write();
    await rm(this.inboxPath, { force: true });
    return pending.length;
  }

  /** The durable receipt: one JSON line per accepted event. */
  async accept(event: WebhookEvent): Promise<void> {
    await appendFile(this.inboxPath, `${JSON.stringify(event)}\n`);
  }

  /** Applies `event` if it is newer than the record's last applied version ('stale' otherwise, with the version held). */
  async apply(event: WebhookEvent): Promise<{ outcome: ApplyOutcome; held?: number }> {
    const outcome = await applyEvent(this.versions, event, (e) => applyToRecords(this.state.records, e));
    if (!outcome.applied) return { outcome: 'stale', held: outcome.lastVersion ?? undefined };
    this.#saveSoon();
    return { outcome: outcome.result };
  }

  /** Resolves when the file reflects every applied event. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  #saveSoon(): void {
    if (this.#writing) {
      this.#dirty = true;
      return;
    }
    this.#writing = this.#write().finally(() => {
      this.#writing = null;
      if (this.#dirty) {
        this.#dirty = false;
        this.#saveSoon();
      }
    });
  }

  async #write(): Promise<void> {
    // Write-then-rename: a reader (or a crash) never sees half a file.
    const tmp = `${this.path}.tmp`;
    this.state.versions = this.versions.toJSON();
    await writeFile(tmp, JSON.stringify(this.state, null, 2));
    await rename(tmp, this.path);
  }
}

/** What the kit acknowledged without handing it to `process`, in one line. */
function acknowledgedLine(fields: object, message: string): string {
  const { eventId, eventType, receiverId } = fields as { eventId?: string; eventType?: string; receiverId?: string };
  const at = new Date().toISOString();
  if (message === 'duplicate webhook event ignored') return `${at} duplicate ${eventId} ignored (${eventType})`;
  if (eventType === 'WEBHOOK_TEST') return `${at} test event ${eventId} from receiver ${receiverId} acknowledged`;
  if (message === 'webhook event of another type acknowledged')
    return `${at} ${eventType} event ${eventId} acknowledged (nothing to apply)`;
  return `${message} ${JSON.stringify(fields)}`;
}

export type ExampleReceiver = {
  url: string;
  server: Server;
  store: JsonFileStore;
  idle: () => Promise<void>;
  close: () => Promise<void>;
};

export async function startExampleReceiver(options: {
  port: number;
  host?: string;
  /** The secret, or [new, previous] during a rotation. */
  secret?: string | readonly string[] | null;
  allowUnsigned?: boolean;
  storePath: string;
  log?: (line: string) => void;
}): Promise<ExampleReceiver> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const store = new JsonFileStore(options.storePath);
  const replayed = await store.open();
  let staleExplained = false;
  if (replayed) log(`replayed ${replayed} event(s) from ${store.inboxPath}`);

  const receiver = webhookReceiver({
    secret: options.secret,
    allowUnsigned: options.allowUnsigned,
    store: (event) => store.accept(event),
    process: async (event) => {
      const { outcome, held } = await store.apply(event);
      log(
        `${new Date().toISOString()} ${event.type} ${event.resource.id} event=${event.id} version=${event.resource.version} -> ${outcome}${held === undefined ? '' : ` (the store holds version ${held})`} (${Object.keys(store.state.records).length} records)`,
      );
      // Versions only grow for one service's records: a store ahead of the service is one kept from
      // a database since reset (npm run clean, a new DATABASE_URL), and it would drop every change.
      if (held !== undefined && !staleExplained) {
        staleExplained = true;
        log(
          `  ignored: not newer than what the store holds. If the service's database was reset since this store was written (npm run clean, another DATABASE_URL), stop this receiver, delete ${store.path} (or set RECEIVER_STORE_PATH to a new file) and start it again`,
        );
      }
    },
    logger: {
      // One line for an event acknowledged without applying anything: a test event, a duplicate.
      info: (fields, message) => log(acknowledgedLine(fields, message)),
      warn: (fields, message) => log(`${message} ${JSON.stringify(fields)}`),
      error: (fields, message) =>
        log(
          `${message} ${JSON.stringify(fields, (k, v: unknown) => (k === 'err' && v instanceof Error ? v.message : v))}`,
        ),
    },
  });

  const app = express();
  app.disable('x-powered-by');
  app.post('/webhooks', receiver);
  app.get('/records', (_req, res) => void res.json(Object.values(store.state.records)));
  app.get('/records/:id', (req, res) => {
    const record = store.state.records[req.params.id];
    if (record) res.json(record);
    else res.status(404).json({ error: 'not found' });
  });

  const server = app.listen(options.port, options.host ?? '127.0.0.1');
  await new Promise<void>((resolveListen, reject) => {
    server.once('listening', resolveListen);
    server.once('error', reject);
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address === '0.0.0.0' ? '127.0.0.1' : address;
  const idle = async () => {
    await receiver.idle();
    await store.flush();
  };
  return {
    url: `http://${host}:${port}`,
    server,
    store,
    idle,
    close: async () => {
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
      });
      await idle();
    },
  };
}

/** The store without RECEIVER_STORE_PATH: in lods-example-receiver-<uid> (a directory of this user's) in the OS temp dir. */
export function defaultStorePath(): string {
  const user = process.getuid?.() ?? userInfo().username;
  return join(tmpdir(), `lods-example-receiver-${user}`, 'example-receiver.json');
}

/**
 * Makes the default store's directory (0700), refusing one that is not this user's own directory:
 * anybody may create a name in the temp dir first (or a link there to somewhere else).
 */
async function ownDirectory(dir: string): Promise<void> {
  await mkdir(dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) =>
    e.code === 'EEXIST' ? undefined : Promise.reject(e),
  );
  const stat = await lstat(dir);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid()))
    throw new Error(
      `${dir} is not a directory of yours: remove it, or set RECEIVER_STORE_PATH to put the store elsewhere`,
    );
}

async function main(): Promise<void> {
  const env = process.env;
  const port = Number(env.PORT ?? 4000);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const secret = env.WEBHOOK_SECRET || null;
  const allowUnsigned = env.WEBHOOK_ALLOW_UNSIGNED === '1' || env.WEBHOOK_ALLOW_UNSIGNED === 'true';
  if (!secret && !allowUnsigned) {
    throw new Error(
      'WEBHOOK_SECRET is required (e.g. export WEBHOOK_SECRET=$(openssl rand -hex 32)); set WEBHOOK_ALLOW_UNSIGNED=1 to accept unsigned deliveries instead',
    );
  }
  const secrets = [secret, env.WEBHOOK_SECRET_PREVIOUS].filter((s): s is string => Boolean(s));
  // A Standard Webhooks secret (whsec_ + base64), as `receivers add --scheme standard-webhooks` prints one.
  const standard = secret !== null && /^whsec_[A-Za-z0-9+/]{32,}={0,2}$/.test(secret);
  const storePath = env.RECEIVER_STORE_PATH || defaultStorePath();
  if (!env.RECEIVER_STORE_PATH) await ownDirectory(dirname(storePath));
  const receiver = await startExampleReceiver({
    port,
    host: env.HOST || '127.0.0.1',
    secret: secrets,
    allowUnsigned,
    storePath,
  });
  const url = `${receiver.url}/webhooks`;
  // Before the banner: a supervisor may signal as soon as it sees it.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    process.stdout.write(`${signal}: finishing accepted events\n`);
    receiver.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.stdout.write(
    `Example webhook receiver listening on ${url}\n` +
      `Store: ${receiver.store.path} (${Object.keys(receiver.store.state.records).length} records); browse ${receiver.url}/records\n` +
      `Signature check: ${secret ? `on (WEBHOOK_SECRET${secrets.length > 1 ? ' and WEBHOOK_SECRET_PREVIOUS' : ''}; service-v1 and standard-webhooks deliveries)` : 'OFF (WEBHOOK_ALLOW_UNSIGNED=1): unsigned deliveries are accepted'}\n` +
      // The service refuses secrets shorter than 16 characters when the receiver is added.
      (secret && secret.length < 16
        ? `Warning: WEBHOOK_SECRET has ${secret.length} characters; the service requires at least 16\n`
        : '') +
      '\n' +
      `Register it with the service (the secret is read from your shell, never printed or put on a command line):\n` +
      `  ${secret ? 'printenv WEBHOOK_SECRET | ' : ''}npm run cli -- receivers add --url ${url}${!secret ? ' --unsigned' : standard ? ' --scheme standard-webhooks --secret-stdin' : ' --secret-stdin'}\n` +
      (secret && !standard
        ? `Or as a Standard Webhooks receiver: npm run cli -- receivers add --url ${url} --scheme standard-webhooks --json\n` +
          `  prints a generated whsec_ secret once: restart this receiver with WEBHOOK_SECRET set to it\n`
        : '') +
      '\n',
  );
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`fatal: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
