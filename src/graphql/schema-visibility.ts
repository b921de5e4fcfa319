// What a caller may learn about the schema itself: only a key holding graphql:read (the internal
// readers, whose tools generate code from it) may introspect (__schema, __type) or get "Did you
// mean ...?" in validation errors, which name fields and types. Keys with only catalog:write or
// receivers:manage (self-service teams) use the operations documented for them (schema/*.graphql);
// __typename stays open to every GraphQL scope (clients add it to every selection).
// Apollo's own switches (introspection, hideSchemaDetailsFromClientErrors) apply to everyone.
import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, NoSchemaIntrospectionCustomRule, validate, type GraphQLSchema } from 'graphql';
import { documentCache, DOCUMENTS_KEPT } from './document-cache.ts';
import type { GraphQLContext } from './resolvers.ts';

const SUGGESTION = / ?Did you mean(.+?)\?$/;

export function schemaDetailsForGraphqlReadOnly(schema: GraphQLSchema): ApolloServerPlugin<GraphQLContext> {
  const introspects = documentCache<boolean>(DOCUMENTS_KEPT);
  return {
    async requestDidStart({ contextValue }) {
      if (contextValue.principal.scopes.has('graphql:read')) return;
      return {
        // Every error of the answer: validation's, and those of graphql-js's coercion of variables
        // (after validation), whose messages and invalidParams suggest too ('Did you mean "title"?').
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single' || !response.body.singleResult.errors) return;
          response.body.singleResult.errors = response.body.singleResult.errors.map((error) => {
            const params = error.extensions?.invalidParams as { name: string; reason: string }[] | undefined;
            return {
              ...error,
              message: error.message.replace(SUGGESTION, ''),
              ...(params && {
                extensions: {
                  ...error.extensions,
                  invalidParams: params.map((p) => ({ ...p, reason: p.reason.replace(SUGGESTION, '') })),
                },
              }),
            };
          });
        },
        async didResolveOperation({ document, queryHash }) {
          if (!introspects(queryHash, () => validate(schema, document, [NoSchemaIntrospectionCustomRule]).length > 0))
            return;
          throw new GraphQLError(
            'This API key lacks the "graphql:read" scope, which introspection (__schema, __type) needs',
            {
              extensions: { code: 'FORBIDDEN', http: { status: 403 } },
            },
          );
        },
      };
    },
  };
}
