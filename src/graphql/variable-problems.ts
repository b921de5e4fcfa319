// A variable that does not fit its type (a missing required field, a string for an Int, an unknown
// enum value or field) is refused by graphql-js before any resolver runs: BAD_USER_INPUT, HTTP 400,
// with the field only inside the message. Our own validation names fields in
// extensions.invalidParams (input.sessions[0].startsAt), and clients read that. This gives those
// errors the same member, named by the argument the variable feeds, so a client finds the field
// in one place whatever its kind of mistake and whatever it called its variables.
import type { ApolloServerPlugin } from '@apollo/server';
import { type DocumentNode, type GraphQLFormattedError, Kind, visit } from 'graphql';
import type { InvalidParam } from '../kernel/errors.ts';

// The forms of graphql-js 16's coerceVariableValues messages (after errors.ts removed the value).
const INVALID = /^Variable "\$([A-Za-z_]\w*)" got invalid value(?: at "([^"]*)")?(?:; (.*)|\.)?$/s;
const ABSENT =
  /^Variable "\$([A-Za-z_]\w*)" of (?:required|non-null) type "[^"]*" (was not provided|must not be null)\.$/;
const FIELD = /^Field "([A-Za-z_]\w*)" (?:of required type "[^"]*" was not provided|is not defined by type "[^"]*")/;

/** Argument names fed by each variable used as a whole argument value; several: none kept. */
function argumentsOfVariables(document: DocumentNode): Map<string, string | null> {
  const found = new Map<string, string | null>();
  visit(document, {
    Argument(node) {
      if (node.value.kind !== Kind.VARIABLE) return;
      const variable = node.value.name.value;
      found.set(variable, found.has(variable) && found.get(variable) !== node.name.value ? null : node.name.value);
    },
  });
  return found;
}

export function variableInvalidParam(message: string, document: DocumentNode | undefined): InvalidParam | null {
  let variable: string;
  let rest = '';
  let reason: string;
  const absent = ABSENT.exec(message);
  const invalid = absent ? null : INVALID.exec(message);
  if (absent) {
    [, variable = '', reason = ''] = absent;
  } else if (invalid) {
    const at = invalid[2];
    variable = invalid[1]!;
    reason = invalid[3] ?? 'is invalid';
    // graphql-js prints the path from the variable's name: in.sessions[0].startsAt
    if (at?.startsWith(variable)) rest = at.slice(variable.length);
    const field = FIELD.exec(reason)?.[1];
    if (field) rest += `.${field}`;
  } else return null;
  const argument = document ? argumentsOfVariables(document).get(variable) : undefined;
  return { name: `${argument ?? `$${variable}`}${rest}`, reason: reason.replace(/\.$/, '') };
}

export function variableProblems(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, document }) {
          if (response.body.kind !== 'single') return;
          const errors = response.body.singleResult.errors;
          if (!errors?.some((e) => e.extensions?.code === 'BAD_USER_INPUT' && !e.extensions.invalidParams)) return;
          response.body.singleResult.errors = errors.map((error): GraphQLFormattedError => {
            if (error.extensions?.code !== 'BAD_USER_INPUT' || error.extensions.invalidParams) return error;
            const param = variableInvalidParam(error.message, document);
            return param ? { ...error, extensions: { ...error.extensions, invalidParams: [param] } } : error;
          });
        },
      };
    },
  };
}
