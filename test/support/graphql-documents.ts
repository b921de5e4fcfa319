// GraphQL documents for the catalog, selecting every field of the record so that a mutation's
// answer can be compared with the REST bytes of the same state.
import type { Api } from '../../src/app/service.ts';
import { graphql, type GraphQLResponse } from './api.ts';

export const RECORD_FIELDS = `
  fragment Record on LearningOpportunity {
    id title summary description url provider { name url } format language topics
    price { amount currency } status publishedAt createdAt updatedAt
    sessions { id startsAt endsAt timezone format location { name address city country } capacity }
    deadlines { id type dueAt description }
    faqs { id question answer }
    externalReviews { id source url rating maxRating reviewCount excerpt reviewedAt }
    accolades { id title issuer awardedAt url }
  }`;

export const UPSERT = `mutation ($input: LearningOpportunityInput!) { upsertLearningOpportunity(input: $input) { ...Record } } ${RECORD_FIELDS}`;
export const PUBLISH = `mutation ($id: ID!) { publishLearningOpportunity(id: $id) { ...Record } } ${RECORD_FIELDS}`;
export const ARCHIVE = `mutation ($id: ID!) { archiveLearningOpportunity(id: $id) { ...Record } } ${RECORD_FIELDS}`;
export const DELETE = `mutation ($id: ID!) { deleteLearningOpportunity(id: $id) { ...Record } } ${RECORD_FIELDS}`;
export const GET_ONE = `query ($id: ID!) { learningOpportunity(id: $id) { ...Record } } ${RECORD_FIELDS}`;
export const GET_PAGE = `query ($limit: Int, $offset: Int) { learningOpportunities(limit: $limit, offset: $offset) { results { ...Record } pagination { totalCount limit offset } } } ${RECORD_FIELDS}`;

export type RecordJson = Record<string, unknown> & {
  id: string;
  status: string;
  updatedAt: string;
  publishedAt: string | null;
};

const MUTATION_FIELDS = {
  upsert: ['upsertLearningOpportunity', UPSERT],
  publish: ['publishLearningOpportunity', PUBLISH],
  archive: ['archiveLearningOpportunity', ARCHIVE],
  delete: ['deleteLearningOpportunity', DELETE],
} as const;

/** Runs one mutation that must succeed; returns the record it answered with. */
export async function mutate(
  api: Api,
  key: string,
  kind: keyof typeof MUTATION_FIELDS,
  arg: Record<string, unknown> | string,
): Promise<RecordJson> {
  const [field, document] = MUTATION_FIELDS[kind];
  const variables = typeof arg === 'string' ? { id: arg } : { input: arg };
  const res = await graphql<Record<string, RecordJson>>(api, key, document, variables);
  if (res.status !== 200 || res.body.errors || !res.body.data?.[field])
    throw new Error(`${kind} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data[field];
}

/** The single error of a failed GraphQL request. */
export function onlyError(res: GraphQLResponse): NonNullable<GraphQLResponse['body']['errors']>[number] {
  if (!res.body.errors || res.body.errors.length !== 1)
    throw new Error(`expected one error, got ${JSON.stringify(res.body)}`);
  return res.body.errors[0]!;
}
