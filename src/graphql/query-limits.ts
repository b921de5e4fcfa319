// Bounds on what one GraphQL request may cost (its tokens are counted before it is parsed, in
// http-gate.ts), checked after validation and before anything runs: depth, aliases and directives
// (graphql-armor's rules; directives counted with fragments expanded), and an estimated cost (graphql-query-complexity) in
// which a paged list costs its `limit` times what is selected under it, so aliases and list sizes
// both count. A last bound caps the serialized response (response-size.ts). Every refusal is
// QUERY_TOO_COMPLEX.
import type { ApolloServerPlugin } from '@apollo/server';
import { documentCache, DOCUMENTS_KEPT } from './document-cache.ts';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import {
  BREAK,
  type DocumentNode,
  getNamedType,
  getNullableType,
  GraphQLError,
  type GraphQLField,
  type GraphQLSchema,
  isLeafType,
  isListType,
  isObjectType,
  Kind,
  type ValidationRule,
  validate,
  visit,
} from 'graphql';
import { type ComplexityEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { FEED_LIMIT_DEFAULT, FEED_LIMIT_MAX } from '../feed/feed-reads.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../kernel/paging.ts';
import type { GraphQLContext } from './resolvers.ts';

export type QueryLimits = {
  maxCost: number;
  maxDepth: number;
  maxAliases: number;
  maxResponseBytes: number;
  maxTokens: number;
  maxDirectives: number;
};

// Lists without paging (a record's sessions, the schema's types in introspection) are priced at an
// assumed size: enough to make nested introspection lists expensive, small against real pages.
const UNPAGED_LIST_SIZE = 10;
// Guards the estimate itself: fragments spread inside fragments multiply the nodes to visit.
const MAX_QUERY_NODES = 10_000;
/** The depth of graphql-js's standard introspection query, every option on. */
export const INTROSPECTION_DEPTH = 15;

export const tooComplex = (detail: string): GraphQLError =>
  new GraphQLError(detail, { extensions: { code: 'QUERY_TOO_COMPLEX', http: { status: 400 } } });

/**
 * What filtering costs beyond the records returned (learningOpportunities): each facet counts over
 * the whole filtered result, and a search ranks its matches. Priced so that a full page of every
 * field (about 34,000) with every facet and a search passes the default limit (50,000) no longer.
 */
export const FACET_COST = 3_000;
export const SEARCH_COST = 2_000;
const listQueryCost = (args: Record<string, unknown>): number =>
  (Array.isArray(args.facets) ? new Set(args.facets).size * FACET_COST : 0) +
  (typeof args.search === 'string' ? SEARCH_COST : 0);

const takesLimit = (field: GraphQLField<unknown, unknown>) => field.args.some((a) => a.name === 'limit');
// The arguments the estimators below read.
const PRICED_ARGUMENTS = new Set(['limit', 'facets', 'search']);

/**
 * Whether a document's cost can depend on its variables: a variable in a priced argument or in a
 * directive (`@include(if: $x)` decides what is counted). Otherwise every request of the document
 * costs the same, whatever its variables (a mutation's input, a record's id).
 */
export function costReadsVariables(document: DocumentNode): boolean {
  let reads = false;
  visit(document, {
    Variable(_node, _key, parent, _path, ancestors) {
      // `ancestors` stops short of `parent`, the argument itself when the variable is its whole value.
      const priced = [...ancestors, parent].some(
        (a) =>
          a !== undefined &&
          'kind' in a &&
          (a.kind === Kind.DIRECTIVE || (a.kind === Kind.ARGUMENT && PRICED_ARGUMENTS.has(a.name.value))),
      );
      if (!priced) return undefined;
      reads = true;
      return BREAK;
    },
  });
  return reads;
}

/**
 * A field taking `limit` (a list, or a page object such as LearningOpportunityPage) costs its limit
 * times its selection; the lists of a page object are then counted once, not again. The change feed
 * (`events`) pages by up to 1000.
 */
function pagedEstimator(schema: GraphQLSchema): ComplexityEstimator {
  const pageTypes = new Set<string>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const returned = getNullableType(field.type);
      if (takesLimit(field) && isObjectType(returned)) pageTypes.add(returned.name);
    }
  }
  return ({ type, field, args, childComplexity }) => {
    // Introspection's leaves are properties of the schema in memory: what its answer costs is the
    // number of types, fields and values it lists, priced by the lists below. Counted at 1 each, the
    // standard introspection query cost 49,432, and with `inputValueDeprecation` (Apollo Sandbox,
    // code generators set to it) 51,832: over the default limit.
    if (type.name.startsWith('__') && isLeafType(getNamedType(field.type))) return 0;
    if (takesLimit(field)) {
      // An out-of-range limit is priced at the maximum: the resolver refuses it as BAD_USER_INPUT.
      const { max, fallback } =
        field.name === 'events'
          ? { max: FEED_LIMIT_MAX, fallback: FEED_LIMIT_DEFAULT }
          : { max: PAGE_LIMIT_MAX, fallback: PAGE_LIMIT_DEFAULT };
      const limit = typeof args.limit === 'number' ? Math.min(Math.max(0, args.limit), max) : fallback;
      return 1 + limit * childComplexity + listQueryCost(args);
    }
    if (!isListType(getNullableType(field.type))) return undefined;
    return 1 + (pageTypes.has(type.name) ? 1 : UNPAGED_LIST_SIZE) * childComplexity;
  };
}

export function queryLimits(schema: GraphQLSchema, limits: QueryLimits): ApolloServerPlugin<GraphQLContext> {
  // armor's rules throw by default; reported instead, they come back from validate() like any rule's.
  const report = {
    propagateOnRejection: false,
    onReject: [
      (ctx: { reportError: (e: GraphQLError) => void } | null, error: GraphQLError) => ctx?.reportError(error),
    ],
  };
  const shapeRules: ValidationRule[] = [
    maxDepthRule({ n: limits.maxDepth, flattenFragments: true, ...report }),
    // armor leaves `__schema` out of the depth above: the standard introspection query (graphql-js's
    // getIntrospectionQuery, with every option: what GraphiQL and code generators send) is 15 deep.
    // Introspection goes that deep and no deeper (a `__schema` with 100 nested `ofType` took 334 ms).
    maxDepthRule({
      n: Math.max(INTROSPECTION_DEPTH, limits.maxDepth),
      flattenFragments: true,
      ignoreIntrospection: false,
      ...report,
    }),
    // Every alias counts, also of __typename (armor lets those through by default).
    maxAliasesRule({ n: limits.maxAliases, allowList: [], ...report }),
    maxDirectivesRule({ n: limits.maxDirectives, ...report }),
  ];
  const estimators = [pagedEstimator(schema), simpleEstimator({ defaultComplexity: 1 })];
  // Per document: the first shape rule it breaks (null: none); and whether it passes the cost limit
  // whatever its variables (its cost reads none, and it was within the limit). Anything else is
  // priced at each request: a refusal, and a document whose cost depends on its variables (or whose
  // first variables were invalid, which execution reports as BAD_USER_INPUT).
  const shapes = documentCache<string | null>(DOCUMENTS_KEPT);
  const passes = documentCache<boolean>(DOCUMENTS_KEPT);
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, request, operation, operationName, queryHash }) {
          // graphql-js validates a subscription against a schema without one and only fails in
          // execution, with an error Apollo labels INTERNAL_SERVER_ERROR; it cannot be priced either.
          if (operation && !schema.getRootType(operation.operation)) {
            throw new GraphQLError(`This API has no ${operation.operation} operations`, {
              extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } },
            });
          }
          const shapeError = shapes(queryHash, () => validate(schema, document, shapeRules)[0]?.message ?? null);
          if (shapeError !== null) throw tooComplex(shapeError.replace(/^Syntax Error: /, ''));
          const price = (): number | null => {
            try {
              return getComplexity({
                schema,
                query: document,
                variables: request.variables ?? {},
                operationName: operationName ?? undefined,
                estimators,
                maxQueryNodes: MAX_QUERY_NODES,
              });
            } catch (error) {
              if (error instanceof GraphQLError && /maximum allowed number of nodes/.test(error.message))
                throw tooComplex(`The query has more than ${MAX_QUERY_NODES} fields once its fragments are expanded`);
              return null; // invalid variables: execution reports them as BAD_USER_INPUT
            }
          };
          const fixedPass = () => !costReadsVariables(document) && (price() ?? Infinity) <= limits.maxCost;
          if (passes(`${queryHash}:${operationName ?? ''}`, fixedPass)) return;
          const cost = price();
          if (cost !== null && cost > limits.maxCost) {
            throw tooComplex(
              `The query costs ${cost}, more than the limit of ${limits.maxCost}: ask for fewer records (limit), fields or aliases per request`,
            );
          }
        },
      };
    },
  };
}
