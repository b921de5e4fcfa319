// One mutation field per request. Each mutation is its own transaction, and every mutation field
// returns a non-null type: in `mutation { a: publish… b: archive… }` a failing `b` nulls the whole
// `data`, so the writer would be told of an error and nothing else while `a` had committed, its event
// already in the feed. Such a request is refused before anything runs; many records go through the
// bulk mutations (one transaction) or one request each.
import type { ApolloServerPlugin } from '@apollo/server';
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { GraphQLContext } from './resolvers.ts';

export function oneMutationPerRequest(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operation }) {
          if (operation?.operation !== 'mutation') return;
          const fields = mutationFields(document, operation);
          if (fields.length <= 1) return;
          throw new GraphQLError(
            `A request carries one mutation, and this one has ${fields.length} (${fields.join(', ')}): each is its own transaction, so an error in one would hide another's committed change. Send each in its own request, or many records at once with upsertLearningOpportunities or publishLearningOpportunities`,
            { extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } } },
          );
        },
      };
    },
  };
}

/** The operation's top-level fields (by response name, fragments expanded), __typename aside. */
function mutationFields(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d]),
  );
  const names: string[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== '__typename') names.push((selection.alias ?? selection.name).value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        // Validation (which ran before) refuses unknown and cyclic spreads; `seen` guards the walk anyway.
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return [...new Set(names)];
}
