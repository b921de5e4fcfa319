// The row "GraphQL page vs REST page" of `npm run bench:query` (issue 22 item 9): a 100-record page
// with every field over GraphQL (learningOpportunities, the document of the tests' RECORD_FIELDS)
// against the same page over REST (/v1/learning-opportunities?limit=100), pages spread over the
// whole catalog (the same offsets on both sides), back to back in ABBA rounds on one service
// process (compareUnderLoad: the round with the median ratio counts). Target: GraphQL >= 0.5x REST.
import { compareUnderLoad } from '../read-path/load.ts';
import type { ServerUnderTest } from '../read-path/servers.ts';

export const GRAPHQL_PAGE_TARGET = 0.5;
const LIMIT = 100;

const RECORD = `id title summary description url provider { name url } format language topics
  price { amount currency } status publishedAt createdAt updatedAt
  sessions { id startsAt endsAt timezone format location { name address city country } capacity }
  deadlines { id type dueAt description }
  faqs { id question answer }
  externalReviews { id source url rating maxRating reviewCount excerpt reviewedAt }
  accolades { id title issuer awardedAt url }`;
export const GRAPHQL_PAGE = `query Page($offset: Int) { learningOpportunities(limit: ${LIMIT}, offset: $offset) { results { ${RECORD} } pagination { totalCount limit offset } } }`;

export type GraphqlPageRow = {
  rest: number;
  graphql: number;
  ratio: number;
  restCpuUs: number | null;
  graphqlCpuUs: number | null;
  failures: number;
};

export async function compareGraphqlPage(
  server: ServerUnderTest,
  headers: Record<string, string>,
  published: number,
  options: { connections: number; durationS: number; rounds: number },
  log: (line: string) => void,
): Promise<GraphqlPageRow> {
  const pages = Math.max(1, Math.floor(published / LIMIT));
  const nextOffset = () => Math.floor(Math.random() * pages) * LIMIT;
  const graphqlHeaders = { ...headers, 'content-type': 'application/json' };
  const graphqlRequest = () => ({
    path: '/graphql',
    method: 'POST' as const,
    headers: graphqlHeaders,
    body: JSON.stringify({ query: GRAPHQL_PAGE, variables: { offset: nextOffset() } }),
  });
  // One request of each first: the GraphQL page must be whole and free of errors (200 alone says little).
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: graphqlHeaders,
    body: graphqlRequest().body,
  });
  const body = (await res.json()) as { errors?: unknown; data?: { learningOpportunities?: { results: unknown[] } } };
  if (
    res.status !== 200 ||
    body.errors ||
    body.data?.learningOpportunities?.results.length !== Math.min(LIMIT, published)
  )
    throw new Error(`GraphQL page: ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
  const targets = [
    {
      name: 'REST',
      url: server.url,
      pid: server.pid,
      headers,
      nextPath: () => `/v1/learning-opportunities?limit=${LIMIT}&offset=${nextOffset()}`,
    },
    { name: 'GraphQL', url: server.url, pid: server.pid, headers, nextPath: graphqlRequest },
  ] as const;
  const results = await compareUnderLoad(
    targets,
    graphqlRequest,
    { ...options, warmupS: Math.min(3, options.durationS) },
    log,
  );
  const [rest, graphql] = [results.get('REST')!, results.get('GraphQL')!];
  return {
    rest: rest.rps,
    graphql: graphql.rps,
    ratio: graphql.rps / rest.rps,
    restCpuUs: rest.cpuUsPerRequest,
    graphqlCpuUs: graphql.cpuUsPerRequest,
    failures: rest.failures + graphql.failures,
  };
}
