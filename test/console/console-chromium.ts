// What the console's Chromium tests share: a page that records console errors, uncaught errors and
// CSP violations (Chromium reports those as console errors), accepts confirm() dialogs, and signs in
// with a key through the "API key" field.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSchema, GraphQLEnumType } from 'graphql';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';

export type ConsolePages = {
  /** Console errors and page errors of every page opened; the test's afterEach expects none. */
  problems: string[];
  /** A new page, signed in with `key` (on /console, its first page shown). */
  signIn: (key: string, options?: { width?: number }) => Promise<Page>;
};

export function consolePages(browser: () => Browser, baseUrl: () => string): ConsolePages {
  const problems: string[] = [];
  return {
    problems,
    signIn: async (key, { width = 1280 } = {}) => {
      const page = await browser().newPage({ viewport: { width, height: 800 } });
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`${page.url()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
      page.on('dialog', (d) => void d.accept());
      await page.goto(`${baseUrl()}/console`);
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      return page;
    },
  };
}

/** The values of an enum of the GraphQL schema (schema/combined/schema.graphql), in its order. */
export function schemaEnum(name: string): string[] {
  const sdl = readFileSync(resolve(import.meta.dirname, '../../schema/combined/schema.graphql'), 'utf8');
  const type = buildSchema(sdl).getType(name);
  if (!(type instanceof GraphQLEnumType)) throw new Error(`${name} is no enum of the schema`);
  return type.getValues().map((v) => v.name);
}

/** "2026-11-29 03:20:15 UTC · 5 min ago" (what dom.js whenText shows). */
export const WHEN = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · (just now|\d+ (s|min|h|d) ago)$/;

/**
 * A describe's console world and Chromium: started before its tests (skipped without a browser),
 * closed after them, and no console error allowed after each test. Fields are set once the before
 * hook ran.
 */
export function useChromiumConsole(): { world: ConsoleWorld; browser: Browser; pages: ConsolePages } {
  const used = {} as { world: ConsoleWorld; browser: Browser; pages: ConsolePages };
  used.pages = consolePages(
    () => used.browser,
    () => used.world.stack.api.url,
  );
  before(async function () {
    this.timeout(600_000);
    used.world = await startConsoleWorld();
    used.browser = await launchChromiumOrSkip(this);
  });
  after(async () => {
    await used.browser?.close();
    await used.world?.close();
  });
  afterEach(() => {
    expect(used.pages.problems, 'console errors').to.deep.equal([]);
  });
  return used;
}
