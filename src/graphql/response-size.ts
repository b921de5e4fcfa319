// The last bound on a GraphQL request: its serialized response. A response larger than
// maxResponseBytes is replaced by one QUERY_TOO_COMPLEX error with HTTP 400, like every other
// refusal of that code. The size is only known once the result is serialized, and Apollo decides the
// HTTP status before it calls stringifyResult; so the plugin serializes the result in
// willSendResponse (after the other plugins have had their say: it is the last one), where the status
// can still be set, and hands that text to stringifyResult, which then has nothing left to do.
import type { ApolloServerPlugin } from '@apollo/server';
import type { FormattedExecutionResult } from 'graphql';
import { spliceStoredPages } from './stored-results.ts';

type Serialized = { errors: unknown; extensions: unknown; text: string };

export function responseSizeLimit(maxBytes: number): {
  plugin: ApolloServerPlugin;
  stringifyResult: (value: FormattedExecutionResult) => string;
} {
  const refusal = {
    errors: [
      {
        message: `The response would be larger than ${maxBytes} bytes: ask for fewer records or fields per request`,
        extensions: { code: 'QUERY_TOO_COMPLEX' },
      },
    ],
    data: null,
  };
  const refusalText = JSON.stringify(refusal);
  // A result's text, by its data object (results without data are a few errors: serialized as usual).
  const serialized = new WeakMap<object, Serialized>();

  /** The JSON of a result in Apollo's field order, or null when it is larger than maxBytes (or than a string can be). */
  const serialize = (value: FormattedExecutionResult): string | null => {
    let text: string;
    try {
      text = spliceStoredPages(value, JSON.stringify(value));
    } catch (error) {
      if (error instanceof RangeError) return null;
      throw error;
    }
    return text.length > maxBytes || Buffer.byteLength(text) > maxBytes ? null : text;
  };

  return {
    plugin: {
      async requestDidStart() {
        return {
          async willSendResponse({ response }) {
            if (response.body.kind !== 'single') return;
            const result = response.body.singleResult;
            if (!result.data) return;
            const { errors, data, extensions } = result;
            const text = serialize({ errors, data, extensions });
            if (text === null) {
              response.http.status = 400;
              response.body.singleResult = refusal;
            } else serialized.set(data, { errors, extensions, text });
          },
        };
      },
    },
    stringifyResult: (value) => {
      const kept = value.data ? serialized.get(value.data) : undefined;
      if (kept && kept.errors === value.errors && kept.extensions === value.extensions) return kept.text;
      return serialize(value) ?? refusalText;
    },
  };
}
