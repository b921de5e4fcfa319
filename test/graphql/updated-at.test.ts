// updatedAt moves only when the public snapshot changes: an identical (or equivalently spelled)
// upsert changes nothing, not even a byte; a real change moves it forward; nested items keep the
// order they were given in, also after the record is re-rendered from its rows (publish, archive).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { mutate } from '../support/graphql-documents.ts';

async function storedDoc(id: string): Promise<string> {
  const { rows } = await testDb().pool.query<{ doc: string }>('select doc from learning_opportunity where id = $1', [
    id,
  ]);
  return rows[0]!.doc;
}

describe('updatedAt and idempotent upserts', () => {
  const served = useTestApi({ writer: ['catalog:write'], reader: ['catalog:read'] });

  it('an identical upsert of a draft changes nothing', async () => {
    const input = buildLearningOpportunityInput();
    const first = await mutate(served.api, served.writer, 'upsert', input);
    const before = await storedDoc(input.id);
    const second = await mutate(served.api, served.writer, 'upsert', input);
    expect(second).to.deep.equal(first);
    expect(await storedDoc(input.id)).to.equal(before);
  });

  it('an identical upsert of a published record changes nothing: same updatedAt, same REST bytes', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    const rest = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader);
    const again = await mutate(served.api, served.writer, 'upsert', input);
    expect(again).to.deep.equal(published);
    const restAfter = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader);
    expect(restAfter.text).to.equal(rest.text);
  });

  it('an equivalently spelled upsert (case, offsets, decimal padding, omitted optionals) changes nothing', async () => {
    const input = buildLearningOpportunityInput({
      summary: null,
      topics: [],
      language: 'pt-BR',
      price: { amount: '12.50', currency: 'EUR' },
    });
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    const sessions = input.sessions as Record<string, unknown>[];
    const respelled = {
      ...input,
      id: input.id.toUpperCase(),
      summary: undefined,
      topics: undefined,
      language: 'PT-br',
      price: { amount: '12.5', currency: 'EUR' },
      sessions: [
        { ...sessions[0], id: String(sessions[0]!.id).toUpperCase(), startsAt: '2027-03-01T10:00:00+01:00' },
        sessions[1],
      ],
    };
    const again = await mutate(served.api, served.writer, 'upsert', respelled);
    expect(again).to.deep.equal(published);
  });

  it('a changed upsert moves updatedAt forward and keeps createdAt and publishedAt', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    const changed = await mutate(served.api, served.writer, 'upsert', { ...input, description: 'A new description' });
    expect(changed.updatedAt > published.updatedAt, `${changed.updatedAt} > ${published.updatedAt}`).to.equal(true);
    expect(changed).to.include({
      createdAt: published.createdAt,
      publishedAt: published.publishedAt,
      status: 'PUBLISHED',
    });
    const rest = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader);
    expect(rest.body).to.deep.equal(changed);
  });

  it('moves updatedAt strictly forward on every successive change', async () => {
    const input = buildLearningOpportunityInput();
    let previous = (await mutate(served.api, served.writer, 'upsert', input)).updatedAt;
    for (let i = 0; i < 5; i++) {
      const next = (await mutate(served.api, served.writer, 'upsert', { ...input, title: `Version ${i}` })).updatedAt;
      expect(next > previous, `${next} > ${previous}`).to.equal(true);
      previous = next;
    }
  });

  it('a change to one nested item alone moves updatedAt', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    const faqs = input.faqs as Record<string, unknown>[];
    const changed = await mutate(served.api, served.writer, 'upsert', {
      ...input,
      faqs: [{ ...faqs[0], answer: 'Yes, a signed one.' }],
    });
    expect(changed.updatedAt > published.updatedAt).to.equal(true);
    expect((changed.faqs as { answer: string }[])[0]!.answer).to.equal('Yes, a signed one.');
  });

  it('reordering nested items is a change, and the given order survives publish and archive', async () => {
    const ids = Array.from({ length: 6 }, () => randomUUID());
    const faq = (id: string, i: number) => ({ id, question: `Question ${i}?`, answer: `Answer ${i}.` });
    // an order that is neither insertion nor id order
    const order = [3, 0, 5, 1, 4, 2];
    const input = buildLearningOpportunityInput({ faqs: order.map((i) => faq(ids[i]!, i)) });
    const draft = await mutate(served.api, served.writer, 'upsert', input);
    expect((draft.faqs as { id: string }[]).map((f) => f.id)).to.deep.equal(order.map((i) => ids[i]));

    const published = await mutate(served.api, served.writer, 'publish', input.id);
    expect(published.faqs).to.deep.equal(draft.faqs);

    const reordered = [2, 4, 1, 5, 0, 3];
    const moved = await mutate(served.api, served.writer, 'upsert', {
      ...input,
      faqs: reordered.map((i) => faq(ids[i]!, i)),
    });
    expect((moved.faqs as { id: string }[]).map((f) => f.id)).to.deep.equal(reordered.map((i) => ids[i]));
    expect(moved.updatedAt > published.updatedAt).to.equal(true);

    const archived = await mutate(served.api, served.writer, 'archive', input.id);
    expect(archived.faqs).to.deep.equal(moved.faqs);
    const republished = await mutate(served.api, served.writer, 'publish', input.id);
    expect(republished.faqs).to.deep.equal(moved.faqs);
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).body).to.deep.equal(
      republished,
    );
  });

  it('a re-render from the stored rows gives the same bytes as the upsert did (no drift on publish)', async () => {
    const input = buildLearningOpportunityInput({
      language: 'zh-Hant-TW',
      price: { amount: '0', currency: 'USD' },
      externalReviews: [
        {
          id: randomUUID(),
          source: 'S',
          url: null,
          rating: 0,
          maxRating: 0.5,
          reviewCount: 0,
          excerpt: null,
          reviewedAt: null,
        },
      ],
      sessions: [
        {
          id: randomUUID(),
          startsAt: '2027-01-01T00:00:00.123456Z',
          endsAt: null,
          timezone: null,
          format: null,
          location: { name: null, address: null, city: 'Oslo', country: null },
          capacity: 0,
        },
      ],
    });
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    // publish re-rendered from the rows; an identical upsert must find nothing changed
    const again = await mutate(served.api, served.writer, 'upsert', input);
    expect(again.updatedAt).to.equal(published.updatedAt);
    expect(again).to.deep.equal(published);
    expect(published.price).to.deep.equal({ amount: '0.00', currency: 'USD' });
    expect((published.sessions as { startsAt: string }[])[0]!.startsAt).to.equal('2027-01-01T00:00:00.123Z');
  });
});
