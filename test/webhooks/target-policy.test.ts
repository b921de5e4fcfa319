// Receiver URLs and private targets: validated when a receiver is added, and every resolved address
// checked again at delivery time unless WEBHOOK_ALLOW_PRIVATE_TARGETS is on.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { isNonPublicAddress, parseReceiverUrl } from '../../src/webhooks/receivers/target-policy.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

// IPv6 forms that carry a private IPv4 address (issue 7 item 6), and public ones of the same forms.
const EMBEDDED_PRIVATE = [
  'http://[64:ff9b::a9fe:a9fe]/latest/meta-data', // NAT64 of 169.254.169.254
  'http://[64:ff9b::10.0.0.1]/',
  'http://[::127.0.0.1]/', // IPv4-compatible
  'http://[::ffff:0:7f00:1]/', // SIIT ::ffff:0:0/96
  'http://[2002:a9fe:a9fe::1]/', // 6to4 of 169.254.169.254
  'http://[2001:0:808:808::5601:5601]/', // Teredo, client 169.254.169.254 (XOR 0xffffffff)
  'http://[2001:0:7f00:1::f7f7:f7f7]/', // Teredo, server 127.0.0.1
];
const EMBEDDED_PUBLIC = [
  'http://[64:ff9b::808:808]/',
  'http://[2002:808:808::1]/',
  'http://[2001:0:808:808::f7f7:f7f7]/',
];
const refused = { allowPrivateTargets: false };
const allowed = { allowPrivateTargets: true };
const problem = (run: () => unknown): string | null => {
  try {
    run();
    return null;
  } catch (error) {
    return (
      (error as { invalidParams?: { name: string; reason: string }[] }).invalidParams
        ?.map((p) => `${p.name}: ${p.reason}`)
        .join('; ') ?? String(error)
    );
  }
};

describe('webhook targets', () => {
  it('accepts absolute http(s) URLs without credentials, and nothing else', () => {
    expect(parseReceiverUrl('https://hooks.example.org/lods?tenant=7', refused)).to.equal(
      'https://hooks.example.org/lods?tenant=7',
    );
    expect(parseReceiverUrl('http://93.184.215.14:8080/x', refused)).to.equal('http://93.184.215.14:8080/x');
    expect(problem(() => parseReceiverUrl('ftp://example.org/x', refused))).to.equal(
      'url: must be an http or https URL',
    );
    expect(problem(() => parseReceiverUrl('/relative', refused))).to.equal('url: must be an absolute http(s) URL');
    expect(problem(() => parseReceiverUrl('https://user:pw@example.org/', refused))).to.match(
      /^url: must not contain credentials/,
    );
    expect(problem(() => parseReceiverUrl('https://example.org/#frag', refused))).to.equal(
      'url: must not contain a fragment',
    );
    expect(problem(() => parseReceiverUrl(`https://example.org/${'a'.repeat(2048)}`, refused))).to.equal(
      'url: must be at most 2048 characters',
    );
    expect(
      problem(() => parseReceiverUrl('https://example.org/hook#', refused)),
      'a bare #',
    ).to.equal('url: must not contain a fragment');
    expect(problem(() => parseReceiverUrl('https://example.org:0/hook', refused))).to.equal('url: must not use port 0');
    // 2,019 characters as typed, 12,019 once each é is percent-encoded: what is stored is bounded.
    expect(problem(() => parseReceiverUrl(`https://example.org/${'é'.repeat(2000)}`, refused))).to.match(
      /^url: must be at most 2048 characters once normalised/,
    );
    expect(parseReceiverUrl(`https://example.org/${'é'.repeat(300)}`, refused)).to.have.length(19 + 300 * 6 + 1);
  });

  it('refuses loopback, private, link-local and similar literal hosts unless private targets are allowed', () => {
    for (const url of [
      'http://127.0.0.1:3000/',
      'http://10.1.2.3/',
      'http://172.20.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/',
      'http://[fd00::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://0.0.0.0/',
      'http://localhost:8080/',
      'http://api.localhost/',
    ]) {
      expect(
        problem(() => parseReceiverUrl(url, refused)),
        url,
      ).to.match(/points to a loopback or private address/);
      expect(
        problem(() => parseReceiverUrl(url, allowed)),
        url,
      ).to.equal(null);
    }
    for (const address of ['8.8.8.8', '2606:4700:4700::1111', '100.63.255.255'])
      expect(isNonPublicAddress(address), address).to.equal(false);
    for (const address of ['100.64.0.1', 'fe80::1', '224.0.0.1', '255.255.255.255', '::', 'not-an-ip'])
      expect(isNonPublicAddress(address), address).to.equal(true);
  });

  it('refuses the fully qualified forms of localhost (a trailing dot) like the bare name', () => {
    for (const url of ['http://localhost./', 'http://LOCALHOST.:8080/', 'http://api.localhost./']) {
      expect(
        problem(() => parseReceiverUrl(url, refused)),
        url,
      ).to.match(/points to a loopback or private address/);
    }
    expect(problem(() => parseReceiverUrl('http://example.org./', refused))).to.equal(null);
  });

  it('judges IPv6 forms that embed IPv4 (NAT64, compatible, SIIT, 6to4, Teredo) by that IPv4 address when added', () => {
    for (const url of EMBEDDED_PRIVATE)
      expect(
        problem(() => parseReceiverUrl(url, refused)),
        url,
      ).to.match(/points to a loopback or private address/);
    for (const url of EMBEDDED_PUBLIC)
      expect(
        problem(() => parseReceiverUrl(url, refused)),
        url,
      ).to.equal(null);
  });

  it('validates the secret and the event types of a new receiver', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, ...refused };
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: { invalidParams?: { name: string; reason: string }[] }) => e.invalidParams?.[0],
      );
    expect(await codeOf(addReceiver(deps, { url: 'https://example.org/', secret: 'too-short' }))).to.deep.include({
      name: 'secret',
    });
    expect(
      await codeOf(addReceiver(deps, { url: 'https://example.org/', secret: 'has spaces in it, sixteen+' })),
    ).to.deep.include({ name: 'secret' });
    expect(
      await codeOf(addReceiver(deps, { url: 'https://example.org/', types: ['LEARNING_OPPORTUNITY_MOVED'] })),
    ).to.deep.equal({
      name: 'type',
      reason:
        'unknown event type LEARNING_OPPORTUNITY_MOVED; known: LEARNING_OPPORTUNITY_PUBLISHED, LEARNING_OPPORTUNITY_UPDATED, LEARNING_OPPORTUNITY_ARCHIVED, LEARNING_OPPORTUNITY_DELETED, LEARNING_OPPORTUNITY_LEFT_VIEW',
    });
  });

  describe('at delivery time, with private targets refused', () => {
    const stack = useWebhookStack({ config: { allowPrivateTargets: false, maxAttempts: 1 } });
    let receiver: TestReceiver;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver.close();
    });

    it('never connects to a name that resolves to a loopback address, nor to a loopback literal', async () => {
      // Added while allowed (or a public name that now resolves to a private address): the worker checks again.
      const byName = await addReceiver(
        { pool: testDb().pool, secrets: testSecrets, ...allowed },
        { url: receiver.url.replace('127.0.0.1', 'localhost') },
      );
      const byLiteral = await addReceiver(
        { pool: testDb().pool, secrets: testSecrets, ...allowed },
        { url: receiver.url },
      );
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      const rows = await eventually(
        async () => {
          const { rows } = await testDb().pool.query<{ receiver_id: string; outcome: string; error: string }>(
            'select receiver_id, outcome, error from delivery_attempt where receiver_id = any($1)',
            [[byName.id, byLiteral.id]],
          );
          return rows.length === 2 ? rows : null;
        },
        5000,
        'two attempts',
      );
      for (const row of rows) expect(row).to.include({ outcome: 'connection_error', error: 'private_target' });
      expect(receiver.requests).to.deep.equal([]);
    });

    it('never connects to an IPv6 literal that embeds a private IPv4 address', async () => {
      // Added while allowed (e.g. before the policy tightened): the worker judges the embedded IPv4 again.
      const ids: string[] = [];
      for (const url of EMBEDDED_PRIVATE)
        ids.push((await addReceiver({ pool: testDb().pool, secrets: testSecrets, ...allowed }, { url })).id);
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      const rows = await eventually(
        async () => {
          const { rows } = await testDb().pool.query<{ outcome: string; error: string }>(
            'select outcome, error from delivery_attempt where receiver_id = any($1)',
            [ids],
          );
          return rows.length === ids.length ? rows : null;
        },
        5000,
        'one attempt per receiver',
      );
      for (const row of rows) expect(row).to.deep.equal({ outcome: 'connection_error', error: 'private_target' });
    });
  });
});
