// The SDL a newcomer gives a codegen: schema/combined/schema.graphql builds on its own (graphql's
// buildSchema, and @graphql-tools' merge as codegen loaders use it), is the schema the service
// serves, and is what `npm run generate` writes (not stale).
import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { expect } from 'chai';
import { buildSchema, printSchema } from 'graphql';
import { buildSchema as buildServedSchema } from '../../src/graphql/server.ts';
import { COMBINED_SDL_PATH, generateCombinedSdl } from '../../tools/generated-sources.ts';

describe('the combined GraphQL SDL file', () => {
  it('builds alone, as a codegen would load it, into exactly the schema the service serves', () => {
    const sdl = readFileSync(COMBINED_SDL_PATH, 'utf8');
    const served = printSchema(buildServedSchema([]));
    expect(printSchema(buildSchema(sdl))).to.equal(served);
    expect(printSchema(makeExecutableSchema({ typeDefs: [sdl] }))).to.equal(served);
    // The receivers team's types are all there (the fragment alone lacks EventType).
    expect(sdl)
      .to.match(/enum EventType \{/)
      .and.to.match(/type WebhookReceiver \{/);
  });

  it('is what `npm run generate` writes from schema/*.graphql', () => {
    expect(
      readFileSync(COMBINED_SDL_PATH, 'utf8') === generateCombinedSdl(),
      `${COMBINED_SDL_PATH} is stale: run \`npm run generate\` and commit it`,
    ).to.equal(true);
  });
});
