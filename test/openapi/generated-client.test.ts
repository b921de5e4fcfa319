// A client generated from schema/openapi.json (openapi-typescript types + openapi-fetch) uses every
// list parameter with its type: the generated types and a client calling each parameter compile
// under strict TypeScript, wrong values (an unknown format, sort, field or facet; a number for a
// timestamp) do not, and the same calls answer 200 with the filter applied by a running service.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import createClient from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { LIST_FACETS, LIST_SORTS, RECORD_FIELDS } from '../../src/catalog/list-query.ts';
import { FORMATS } from '../../src/catalog/record.ts';
import { OPENAPI_PATH } from '../../src/http/v1/openapi-document.ts';
import { createCatalogClient } from '@lods/client';
import { useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

const ROOT = resolve(import.meta.dirname, '../..');

// Each parameter once, as a consumer would write it (the generated `paths` type checks them).
const CALLS = `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

const client = createClient<paths>({ baseUrl: 'http://localhost', querySerializer: { array: { style: 'form', explode: false } } });

export async function every(): Promise<void> {
  const { data } = await client.GET('/v1/learning-opportunities', {
    params: {
      query: {
        limit: 10,
        offset: 0,
        updatedSince: '2026-01-01T00:00:00.000Z',
        updatedBefore: '2026-12-01T00:00:00.000Z',
        format: ['ONLINE', 'HYBRID'],
        language: ['de', 'en'],
        topic: ['python'],
        provider: ['Harbor College'],
        country: ['DE'],
        city: ['Berlin'],
        startsFrom: '2026-01-01T00:00:00.000Z',
        startsBefore: '2027-01-01T00:00:00.000Z',
        q: 'machine learn',
        sort: 'relevance',
        fields: ['title', 'sessions'],
        facets: ['format', 'topic', 'country'],
      },
    },
  });
  const title: string | undefined = data?.results[0]?.title;
  const counts: number[] | undefined = data?.facets?.topic?.map((f) => f.count);
  void title;
  void counts;
}

export async function wrong(): Promise<void> {
  // @ts-expect-error not a format
  await client.GET('/v1/learning-opportunities', { params: { query: { format: ['PODCAST'] } } });
  // @ts-expect-error not a sort
  await client.GET('/v1/learning-opportunities', { params: { query: { sort: 'title' } } });
  // @ts-expect-error not a field
  await client.GET('/v1/learning-opportunities', { params: { query: { fields: ['secret'] } } });
  // @ts-expect-error not a facet
  await client.GET('/v1/learning-opportunities', { params: { query: { facets: ['city'] } } });
  // @ts-expect-error a timestamp is a string
  await client.GET('/v1/learning-opportunities', { params: { query: { updatedSince: 1 } } });
}
`;

type Doc = {
  components: {
    parameters: Record<string, { schema: { enum?: string[]; items?: { enum?: string[]; $ref?: string } } }>;
    schemas: Record<string, { enum?: string[] }>;
  };
};

describe('a client generated from the OpenAPI document', () => {
  it('states the enums of the code: formats, sorts, fields and facets', () => {
    const doc = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as Doc;
    const p = doc.components.parameters;
    expect(p.sort!.schema.enum).to.deep.equal([...LIST_SORTS]);
    expect(p.fields!.schema.items!.enum).to.deep.equal([...RECORD_FIELDS]);
    expect(p.facets!.schema.items!.enum).to.deep.equal([...LIST_FACETS]);
    expect(p.format!.schema.items!.$ref).to.equal('#/components/schemas/Format');
    expect(doc.components.schemas.Format!.enum).to.deep.equal([...FORMATS]);
  });

  it('compiles a call with every list parameter, and refuses wrong values', async function () {
    this.timeout(120_000);
    const types = astToString(await openapiTS(new URL(`file://${OPENAPI_PATH}`)));
    // Under node_modules so that the generated files resolve openapi-fetch as a consumer's would.
    const dir = mkdtempSync(join(ROOT, 'node_modules/.cache-openapi-client-'));
    try {
      writeFileSync(join(dir, 'api.ts'), types);
      writeFileSync(join(dir, 'calls.ts'), CALLS);
      const program = ts.createProgram([join(dir, 'calls.ts')], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        types: [],
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(diagnostics).to.deep.equal([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('against the service', () => {
    const served = useTestApi(['catalog:read']);
    before(async () => {
      await createRecord(served.api.writes, {
        title: 'Generated client Hybrid Rust',
        format: 'HYBRID',
        topics: ['rust client'],
      });
      await createRecord(served.api.writes, {
        title: 'Generated client Online Rust',
        format: 'ONLINE',
        topics: ['rust client'],
      });
    });

    it('sends comma lists (style form, explode false) that the service filters by', async () => {
      const client = createClient({
        baseUrl: served.api.url,
        headers: { authorization: `Bearer ${served.key}` },
        querySerializer: { array: { style: 'form', explode: false } },
      });
      const { data, response } = await client.GET(
        '/v1/learning-opportunities' as never,
        {
          params: {
            query: {
              topic: ['rust client'],
              format: ['HYBRID', 'IN_PERSON'],
              fields: ['title'],
              facets: ['format'],
              q: 'generated client',
              sort: 'relevance',
            },
          },
        } as never,
      );
      expect(response.status).to.equal(200);
      const body = data as unknown as {
        results: { title: string }[];
        pagination: { totalCount: number };
        facets: { format: { value: string; count: number }[] };
      };
      expect(body.results.map((r) => r.title)).to.deep.equal(['Generated client Hybrid Rust']);
      expect(body.facets.format).to.deep.equal([{ value: 'HYBRID', count: 1 }]);
    });

    it('the client package sends the same parameters', async () => {
      const client = createCatalogClient({ baseUrl: served.api.url, apiKey: served.key, retries: 0 });
      const page = await client.listLearningOpportunities({
        topic: ['rust client'],
        format: ['HYBRID', 'IN_PERSON'],
        updatedSince: new Date(0),
        fields: ['title'],
        facets: ['format'],
        q: 'generated client',
        sort: 'relevance',
        limit: 5,
      });
      expect(page.results.map((r) => r.title)).to.deep.equal(['Generated client Hybrid Rust']);
      expect(page.facets).to.deep.equal({ format: [{ value: 'HYBRID', count: 1 }] });
    });
  });
});
