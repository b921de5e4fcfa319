// The client against the service's real per-key rate limiter: a 429 whose Retry-After is longer
// than the client may wait is not retried early (it would only be refused again): the caller gets
// the 429 at once, with its problem details and Retry-After.
import { expect } from 'chai';
import { CatalogHttpError, createCatalogClient, type RetryInfo } from '@lods/client';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

describe('client against the rate limiter', () => {
  let api: Api;
  let id: string;
  before(async () => {
    api = await startTestApi();
    id = (await createRecord(api.writes)).id;
  });
  after(() => api.close());

  it('gives up at once with the 429 when Retry-After is longer than maxRetryDelayMs', async () => {
    // The limit counts per clock minute: start with at least 5 s of this window left, so that the
    // service's Retry-After (the rest of the window) is longer than the client's 2 s.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 5000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    const key = await createTestKey(['catalog:read'], undefined, 1);
    const retries: RetryInfo[] = [];
    const client = createCatalogClient({
      baseUrl: api.url,
      apiKey: key,
      minRetryDelayMs: 5,
      maxRetryDelayMs: 2000,
      onRetry: (info) => retries.push(info),
    });
    await client.getLearningOpportunity(id);

    const started = performance.now();
    const error = await client.getLearningOpportunity(id).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(CatalogHttpError);
    const http = error as CatalogHttpError;
    expect(http.status).to.equal(429);
    expect(http.attempts).to.equal(1);
    expect(http.problem?.type).to.equal('/problems/rate-limited');
    expect(http.retryAfterMs).to.be.above(2000);
    expect(retries).to.deep.equal([]);
    expect(performance.now() - started, 'did not wait for Retry-After').to.be.below(2000);
  });
});
