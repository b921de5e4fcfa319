// Factories: every test builds its own records with fresh ids.
import { randomUUID } from 'node:crypto';
import type { CatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { testDb } from '../hooks.ts';

export type LearningOpportunityInput = Record<string, unknown> & { id: string };

/** A complete LearningOpportunityInput (GraphQL shape) with every collection used. */
export function buildLearningOpportunityInput(overrides: Record<string, unknown> = {}): LearningOpportunityInput {
  return {
    id: randomUUID(),
    title: 'Applied Data Engineering',
    summary: 'Build pipelines that hold up in production.',
    description: 'Twelve weeks of labs and reviews.',
    url: 'https://courses.example.org/data-engineering',
    provider: { name: 'Northwind University', url: 'https://northwind.example.org' },
    format: 'HYBRID',
    language: 'en',
    topics: ['data', 'python'],
    price: { amount: '1200.00', currency: 'EUR' },
    sessions: [
      {
        id: randomUUID(),
        startsAt: '2027-03-01T09:00:00.000Z',
        endsAt: '2027-03-01T17:00:00.000Z',
        timezone: 'Europe/Berlin',
        format: 'IN_PERSON',
        location: { name: 'Campus North', address: '1 Market Street', city: 'Berlin', country: 'DE' },
        capacity: 30,
      },
      {
        id: randomUUID(),
        startsAt: '2027-03-08T09:00:00.000Z',
        endsAt: null,
        timezone: null,
        format: 'ONLINE',
        location: null,
        capacity: null,
      },
    ],
    deadlines: [
      { id: randomUUID(), type: 'APPLICATION', dueAt: '2027-02-01T23:59:59.000Z', description: 'Apply online' },
    ],
    faqs: [{ id: randomUUID(), question: 'Is there a certificate?', answer: 'Yes.' }],
    externalReviews: [
      {
        id: randomUUID(),
        source: 'Course Report',
        url: 'https://reviews.example.org/1',
        rating: 4.5,
        maxRating: 5,
        reviewCount: 120,
        excerpt: 'Great labs',
        reviewedAt: '2026-06-01T00:00:00.000Z',
      },
    ],
    accolades: [
      {
        id: randomUUID(),
        title: 'Best Online Course',
        issuer: 'EdTech Awards',
        awardedAt: '2026-01-15T00:00:00.000Z',
        url: null,
      },
    ],
    ...overrides,
  };
}

/** Upserts (and by default publishes) a record through the service; returns its rendered JSON. */
/** An in-person session (input shape) starting at `startsAt`, in `city` and `country`. */
export function buildSession(startsAt: string, city: string | null, country: string | null): Record<string, unknown> {
  return {
    id: randomUUID(),
    startsAt,
    endsAt: null,
    timezone: null,
    format: 'IN_PERSON',
    location: { name: 'Hall', address: '1 Main Street', city, country },
    capacity: null,
  };
}

export async function createRecord(
  writes: CatalogWrites,
  overrides: Record<string, unknown> = {},
  options: { publish?: boolean } = {},
): Promise<Record<string, unknown> & { id: string; updatedAt: string }> {
  const input = buildLearningOpportunityInput(overrides);
  let doc = await writes.upsert(parseLearningOpportunityInput(input));
  if (options.publish ?? true) doc = await writes.publish(input.id);
  return JSON.parse(doc) as Record<string, unknown> & { id: string; updatedAt: string };
}

/** Empties this test file's catalog (through DELETE, so that the count triggers keep totalCount right). */
export async function resetCatalog(): Promise<void> {
  await testDb().pool.query('delete from learning_opportunity');
}
