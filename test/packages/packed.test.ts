// The consumer packages as a consumer gets them: `npm pack` (which builds them with tsc), installed
// from the tarballs into a scratch project outside this repository by npm on the machine's system
// Node (20) with --engine-strict (so a dependency that needs a newer Node than the packages promise
// fails the install), and run as plain JavaScript (no TypeScript loader) under that Node and under
// Node 24, as ESM and through require(): the client walks the running service, the kit verifies a
// real delivery, and the client README's examples run as written.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createTestKey } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { mutate } from '../support/graphql-documents.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { startWebhookStack, type WebhookStack } from '../support/webhooks.ts';
import { execFileChild } from '../support/child-processes.ts';

const run = promisify(execFileChild);
const PACKAGES = resolve(import.meta.dirname, '../../packages');
const SYSTEM_NODE = '/usr/bin/node';
const SECRET = 'packed-kit-secret-5d2a9c41e7';

const ESM_SCRIPT = `
import { readFileSync } from 'node:fs';
import { createCatalogClient, walk } from '@lods/client';
import { verifyDelivery } from '@lods/receiver-kit';

const client = createCatalogClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY });
const walked = await walk({ client, limit: 2 });
const d = JSON.parse(readFileSync('delivery.json', 'utf8'));
const body = Buffer.from(d.body, 'base64');
const verified = verifyDelivery({ rawBody: body, headers: d.headers, secret: d.secret });
const tampered = verifyDelivery({ rawBody: Buffer.concat([body, Buffer.from(' ')]), headers: d.headers, secret: d.secret });
console.log(JSON.stringify({ ids: [...walked.records.keys()].sort(), pages: walked.pages, eventId: verified.ok ? verified.event.id : verified.reason, tampered: tampered.ok || tampered.reason }));
`;

const CJS_SCRIPT = `
const { readFileSync } = require('node:fs');
const { createCatalogClient } = require('@lods/client');
const { verifyDelivery } = require('@lods/receiver-kit');
const d = JSON.parse(readFileSync('delivery.json', 'utf8'));
const verified = verifyDelivery({ rawBody: Buffer.from(d.body, 'base64'), headers: d.headers, secret: d.secret });
console.log(JSON.stringify({ client: typeof createCatalogClient, eventId: verified.ok ? verified.event.id : verified.reason }));
`;

describe('consumer packages, packed and installed', () => {
  let dir: string;
  let stack: WebhookStack;
  let receiver: TestReceiver;
  let key: string;
  const published: string[] = [];
  let eventId: string;
  let readmeExamples: string[] = [];

  before(async function () {
    this.timeout(300_000);
    dir = await mkdtemp(join(tmpdir(), 'lods-packed-'));
    const tarballs: string[] = [];
    for (const name of ['client', 'receiver-kit']) {
      const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', dir], {
        cwd: join(PACKAGES, name),
      });
      tarballs.push(join(dir, stdout.trim().split('\n').pop()!));
    }
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'scratch-consumer', private: true, type: 'module' }),
    );
    // npm's shebang finds `node` on PATH: the system Node first, so its engine check is that Node's.
    const installPath = existsSync(SYSTEM_NODE) ? `${dirname(SYSTEM_NODE)}:${process.env.PATH}` : process.env.PATH;
    await run(
      'npm',
      ['install', '--engine-strict', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', ...tarballs],
      {
        cwd: dir,
        env: { ...process.env, PATH: installPath },
        timeout: 240_000,
      },
    );
    await writeFile(join(dir, 'check.mjs'), ESM_SCRIPT);
    await writeFile(join(dir, 'check.cjs'), CJS_SCRIPT);
    const readme = await readFile(join(PACKAGES, 'client/README.md'), 'utf8');
    readmeExamples = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    for (const [i, code] of readmeExamples.entries()) await writeFile(join(dir, `readme-${i}.mjs`), code);

    // The running service with three published records, and one real signed delivery.
    stack = await startWebhookStack();
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url, { secret: SECRET });
    key = await createTestKey();
    for (let i = 0; i < 3; i++) {
      const input = buildLearningOpportunityInput();
      await mutate(stack.api, key, 'upsert', input);
      published.push((await mutate(stack.api, key, 'publish', input.id)).id);
    }
    const [delivery] = await receiver.waitFor(1);
    eventId = String(delivery!.headers['x-service-event-id']);
    await writeFile(
      join(dir, 'delivery.json'),
      JSON.stringify({ body: delivery!.body.toString('base64'), headers: delivery!.headers, secret: SECRET }),
    );
  });

  after(async () => {
    await stack?.stop();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const runtimes = [
    { name: 'the system Node (20)', node: SYSTEM_NODE },
    { name: 'Node 24', node: process.execPath },
  ];
  for (const runtime of runtimes) {
    describe(`under ${runtime.name}`, () => {
      before(function () {
        if (!existsSync(runtime.node)) {
          console.warn(`    skipped: ${runtime.node} is missing`);
          this.skip();
        }
      });
      const exec = (script: string) =>
        run(runtime.node, [script], {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            BASE_URL: stack.api.url,
            API_KEY: key,
            LODS_BASE_URL: stack.api.url,
            LODS_API_KEY: key,
          },
          timeout: 30_000,
        });

      it('ESM: the client walks the service and the kit verifies the delivery (and refuses it tampered)', async () => {
        const { stdout } = await exec('check.mjs');
        const out = JSON.parse(stdout) as { ids: string[]; pages: number; eventId: string; tampered: string };
        expect(out.ids).to.deep.equal([...published].sort());
        expect(out.pages).to.equal(2);
        expect(out.eventId).to.equal(eventId);
        expect(out.tampered).to.equal('SIGNATURE_MISMATCH');
      });

      it('CommonJS: require() loads both packages', async () => {
        const { stdout } = await exec('check.cjs');
        expect(JSON.parse(stdout)).to.deep.equal({ client: 'function', eventId });
      });

      it("the client README's examples run as written against the service", async () => {
        expect(readmeExamples).to.have.length.of.at.least(1);
        let output = '';
        for (const i of readmeExamples.keys()) output += (await exec(`readme-${i}.mjs`)).stdout;
        expect(output)
          .to.contain(`walked ${published.length} records`)
          .and.contain(`sync: ${published.length} records`);
      });
    });
  }
});
