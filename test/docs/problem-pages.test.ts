// Every problem `type` the service can answer with resolves to a page that describes the problem:
// HTML for a browser, JSON with the same description for a client.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { ERROR_CODES, type ErrorCode } from '../../src/kernel/errors.ts';
import type { Api } from '../../src/app/service.ts';
import { startTestApi } from '../support/api.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

/** The slugs of every problem type: each error code (problems are written only through one) and every /problems/<slug> named in src, the OpenAPI document, the README and docs/. */
function slugsInUse(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name));
  const texts = [
    ...sourceFiles(join(ROOT, 'src')),
    join(ROOT, 'schema/openapi.json'),
    join(ROOT, 'README.md'),
    ...docs,
  ].map((f) => readFileSync(f, 'utf8'));
  const named = texts.flatMap((t) => [...t.matchAll(/\/problems\/([a-z][a-z-]*[a-z])/g)].map((m) => m[1]!));
  return [...new Set([...Object.values(ERROR_CODES).map((c) => c.slug), ...named])].sort();
}

describe('problem type pages (/problems/<slug>)', () => {
  let api: Api;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api?.close());

  it('describe every problem type in use, as HTML for a browser and as JSON', async () => {
    const slugs = slugsInUse();
    expect(slugs).to.include('rate-limited').and.include('cursor-expired');
    for (const slug of slugs) {
      const code = (Object.keys(ERROR_CODES) as ErrorCode[]).find((c) => ERROR_CODES[c].slug === slug);
      expect(code, `/problems/${slug} is named somewhere but is no error code`).to.be.a('string');
      const { title, status } = ERROR_CODES[code!];

      const html = await fetch(`${api.url}/problems/${slug}`, {
        headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      });
      expect(html.status, slug).to.equal(200);
      expect(html.headers.get('content-type'), slug).to.match(/^text\/html/);
      const text = await html.text();
      expect(text, slug).to.contain(`<h1>${title}</h1>`).and.contain(`HTTP status ${status}`);
      const description = /<p>(?!Problem type|Every problem)(.+)<\/p>/.exec(text)?.[1] ?? '';
      expect(description.length, `${slug}: describes the problem`).to.be.greaterThan(60);

      const json = await fetch(`${api.url}/problems/${slug}`, { headers: { accept: 'application/json' } });
      expect(json.status, slug).to.equal(200);
      const body = (await json.json()) as Record<string, unknown>;
      expect(body, slug).to.include({ type: `/problems/${slug}`, title, status, code });
      expect(String(body.description).length, `${slug}: JSON description`).to.be.greaterThan(60);
    }
  });

  it('says over GraphQL an invalid state transition is HTTP 200, not a 409 problem', async () => {
    const body = (await (await fetch(`${api.url}/problems/invalid-state-transition`)).json()) as {
      description: string;
    };
    expect(body.description).to.match(/HTTP 200/);
  });
});
