// "Did you mean ...?" in validation errors names fields and types of the schema: only a caller who
// may read it (graphql:read) gets them. The same rewrite as Apollo's hideSchemaDetailsFromClientErrors,
// which can only be switched on for everyone.
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from './resolvers.ts';

const SUGGESTION = / ?Did you mean(.+?)\?$/;

export function hideSuggestionsWithoutGraphqlRead(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart({ contextValue }) {
      if (contextValue.principal.scopes.has('graphql:read')) return;
      return {
        async validationDidStart() {
          return async (errors) => {
            for (const error of errors ?? []) error.message = error.message.replace(SUGGESTION, '');
          };
        },
      };
    },
  };
}
