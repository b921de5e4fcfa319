// A record's rendered size is bounded at write time (RECORD_MAX_BYTES, 256 KiB, counted in UTF-8
// bytes of the doc as it renders once published): a larger one is BAD_USER_INPUT naming its largest
// field, in a single and in a bulk upsert, and nothing is written; one just below is accepted.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { RECORD_MAX_BYTES } from '../../src/catalog/record-size.ts';
import { testDb } from '../hooks.ts';
import { graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { onlyError, UPSERT } from '../support/graphql-documents.ts';

const UPSERT_MANY =
  'mutation ($inputs: [LearningOpportunityInput!]!) { upsertLearningOpportunities(inputs: $inputs) { id } }';

/** An input with `count` FAQs whose answers are `length` repetitions of `char` (the limit per answer is 50,000 characters). */
const withFaqs = (count: number, length: number, char = 'a') =>
  buildLearningOpportunityInput({
    faqs: Array.from({ length: count }, (_, n) => ({
      id: randomUUID(),
      question: `Q${n}?`,
      answer: char.repeat(length),
    })),
  });

async function stored(id: string): Promise<string | null> {
  const { rows } = await testDb().pool.query<{ doc: string }>('select doc from learning_opportunity where id = $1', [
    id,
  ]);
  return rows[0]?.doc ?? null;
}

describe('record size bound', function () {
  this.timeout(30_000);
  const served = useTestApi({ writer: ['catalog:write'] });

  it('rejects a record above 256 KiB rendered with BAD_USER_INPUT naming its largest field, and writes nothing', async () => {
    const input = withFaqs(6, 50_000); // ~300 KB
    const error = onlyError(await graphql(served.api, served.writer, UPSERT, { input }));
    expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
    const params = error.extensions?.invalidParams ?? [];
    expect(params.map((p) => p.name)).to.deep.equal(['input.faqs']);
    expect(params[0]!.reason).to.include(String(RECORD_MAX_BYTES));
    expect(await stored(input.id)).to.equal(null);
  });

  it('counts bytes, not characters: 150,000 two-byte characters are over the bound', async () => {
    const input = withFaqs(5, 30_000, 'é');
    const error = onlyError(await graphql(served.api, served.writer, UPSERT, { input }));
    expect(error.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal(['input.faqs']);
    expect(await stored(input.id)).to.equal(null);
  });

  it('names the item of a bulk upsert, and writes none of the batch', async () => {
    const small = buildLearningOpportunityInput();
    const big = buildLearningOpportunityInput({ description: 'd'.repeat(50_000), faqs: withFaqs(5, 45_000).faqs });
    const error = onlyError(await graphql(served.api, served.writer, UPSERT_MANY, { inputs: [small, big] }));
    expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(error.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal(['inputs[1].faqs']);
    expect(await stored(small.id)).to.equal(null);
  });

  it('accepts a record just below the bound, and serves it whole', async () => {
    const input = withFaqs(5, 50_000); // ~251 KB of 262,144 bytes
    const res = await graphql<{ upsertLearningOpportunity: { id: string } }>(served.api, served.writer, UPSERT, {
      input,
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    const doc = (await stored(input.id))!;
    expect(Buffer.byteLength(doc)).to.be.within(250_000, RECORD_MAX_BYTES);
  });
});
