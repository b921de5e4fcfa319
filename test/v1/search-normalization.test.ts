// A search is read in Unicode's compatibility form (NFKC): full-width letters, typed by input methods
// for Chinese and Japanese, and ligatures such as "ﬁ" are the letters they stand for. Before, `q` in
// full-width letters found nothing.
import { expect } from 'chai';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

type Page = { results: { id: string }[]; pagination: { totalCount: number } };

describe('search text in compatibility forms (full-width letters, ligatures)', () => {
  const served = useTestApi({ restKey: ['catalog:read'], graphKey: ['graphql:read'] });
  let id: string;
  before(async () => {
    id = (await createRecord(served.api.writes, { title: 'Qwzx Financial Analytics' })).id;
  });

  it('finds a record written in full-width letters or ligatures by the same characters, in a search of one or several words', async () => {
    const written = (await createRecord(served.api.writes, { title: 'Ｐｙｔｈｏｎ入門 ｚｑｖｘ ﬁnanzen' })).id;
    for (const q of ['ｚｑｖｘ', 'ﬁnanzen', 'ｚｑｖｘ ﬁnanzen', 'ｐｙｔｈｏｎ入門 ｚｑ']) {
      const res = await getJson(served.api, `/v1/learning-opportunities?q=${encodeURIComponent(q)}`, served.restKey);
      expect(res.status, q).to.equal(200);
      expect(
        (res.body as Page).results.map((r) => r.id),
        q,
      ).to.deep.equal([written]);
      expect((res.body as Page).pagination.totalCount, q).to.equal(1);
    }
  });

  it('finds by full-width letters and ligatures what the plain letters find, in REST and GraphQL', async () => {
    // A full-width stop word is dropped as the plain one is, and as the last word it is a prefix.
    for (const q of [
      'qwzx analytics',
      'ｑｗｚｘ　ａｎａｌｙｔｉｃｓ',
      'qwzx ﬁnancial',
      'ＱＷＺＸ',
      'ｑｗｚｘ ａｎｄ ａｎａｌｙｔｉｃｓ',
      'ＱＷＺＸ ａ',
    ]) {
      const res = await getJson(served.api, `/v1/learning-opportunities?q=${encodeURIComponent(q)}`, served.restKey);
      expect(res.status, q).to.equal(200);
      expect(
        (res.body as Page).results.map((r) => r.id),
        q,
      ).to.deep.equal([id]);
      const gql = await graphql<{ learningOpportunities: Page }>(
        served.api,
        served.graphKey,
        'query($q: String) { learningOpportunities(search: $q) { results { id } } }',
        { q },
      );
      expect(
        gql.body.data?.learningOpportunities.results.map((r) => r.id),
        q,
      ).to.deep.equal([id]);
    }
  });
});
