// The record schema (src/catalog/record-schema.ts) is the one source of the record's shape: the
// committed OpenAPI document and client types are exactly what `npm run generate` writes from it,
// and the hand-written GraphQL SDL declares the same fields, in the same order, with the same types.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import { Kind, parse, print, type EnumTypeDefinitionNode, type ObjectTypeDefinitionNode } from 'graphql';
import { z } from 'zod';
import { RecordSchema } from '../../src/catalog/record-schema.ts';
import {
  CLIENT_TYPES_PATH,
  generateClientTypes,
  generateOpenApi,
  OPENAPI_PATH,
} from '../../tools/generated-sources.ts';

const STALE = 'is stale: run `npm run generate` and commit the result';

describe('generated from the record schema', () => {
  it('schema/openapi.json carries exactly the generated record components (and keeps its hand-kept parts)', () => {
    const committed = readFileSync(OPENAPI_PATH, 'utf8');
    expect(committed === generateOpenApi(committed), `schema/openapi.json ${STALE}`).to.equal(true);
  });

  it('the client types are exactly the generated ones', () => {
    expect(readFileSync(CLIENT_TYPES_PATH, 'utf8') === generateClientTypes(), `${CLIENT_TYPES_PATH} ${STALE}`).to.equal(
      true,
    );
  });

  it('a field added to the schema shows up in the generated document and types', () => {
    // What the staleness tests above rely on: the output follows the schema.
    const committed = readFileSync(OPENAPI_PATH, 'utf8');
    const doc = JSON.parse(generateOpenApi(committed)) as {
      components: { schemas: { LearningOpportunity: { properties: object; required: string[] } } };
    };
    const record = doc.components.schemas.LearningOpportunity;
    expect(Object.keys(record.properties)).to.deep.equal(Object.keys(RecordSchema.shape));
    expect(record.required).to.deep.equal(Object.keys(RecordSchema.shape));
  });
});

type Json = { [keyword: string]: unknown };

describe('the GraphQL SDL against the record schema', () => {
  const sdl = parse(readFileSync(resolve(import.meta.dirname, '../../schema/catalog.graphql'), 'utf8'));
  const objects = new Map(
    sdl.definitions
      .filter((d): d is ObjectTypeDefinitionNode => d.kind === Kind.OBJECT_TYPE_DEFINITION)
      .map((d) => [d.name.value, d]),
  );
  const enums = sdl.definitions.filter((d): d is EnumTypeDefinitionNode => d.kind === Kind.ENUM_TYPE_DEFINITION);
  const json = z.toJSONSchema(RecordSchema, { io: 'input' }) as Json & { $defs: Record<string, Json> };
  // Nested objects declared inline in the zod schema are named types in GraphQL.
  const INLINE_OBJECT_NAMES: Record<string, string> = { provider: 'Provider', price: 'Price' };

  /** The GraphQL type a JSON Schema node must have; checks nested object types on the way. */
  function expectedType(node: Json, field: string): string {
    let nullable = false;
    let name: string | null = null;
    if (Array.isArray(node.anyOf)) {
      const branches = (node.anyOf as Json[]).filter((b) => b.type !== 'null');
      nullable = branches.length < node.anyOf.length;
      node = branches[0]!;
    }
    if (typeof node.$ref === 'string') {
      name = node.$ref.split('/').pop()!;
      node = { ...json.$defs[name]!, ...node, $ref: undefined };
    }
    let types = Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
    if (types.includes('null')) [nullable, types] = [true, types.filter((t) => t !== 'null')];
    const bare = ((): string => {
      if (Array.isArray(node.enum)) {
        const match = enums.find(
          (e) => JSON.stringify(e.values?.map((v) => v.name.value)) === JSON.stringify(node.enum),
        );
        if (!match) throw new Error(`${field}: no GraphQL enum with the values ${JSON.stringify(node.enum)}`);
        return match.name.value;
      }
      if (name === 'Uuid') return 'ID';
      switch (types[0]) {
        case 'string':
          return 'String';
        case 'integer':
          return 'Int';
        case 'number':
          return 'Float';
        case 'array':
          return `[${expectedType(node.items as Json, `${field}[]`)}]`;
        case 'object': {
          const typeName = name ?? INLINE_OBJECT_NAMES[field.split('.').pop()!];
          if (!typeName) throw new Error(`${field}: name its GraphQL type in INLINE_OBJECT_NAMES`);
          expectFields(typeName, node);
          return typeName;
        }
        default:
          throw new Error(`${field}: no GraphQL type for ${JSON.stringify(node)}`);
      }
    })();
    return nullable ? bare : `${bare}!`;
  }

  function expectFields(typeName: string, node: Json): void {
    const type = objects.get(typeName);
    expect(type, `GraphQL type ${typeName}`).to.not.equal(undefined);
    const properties = node.properties as Record<string, Json>;
    const declared = (type!.fields ?? []).map((f) => [f.name.value, print(f.type)]);
    const expected = Object.entries(properties).map(([key, property]) => [
      key,
      expectedType(property, `${typeName}.${key}`),
    ]);
    expect(declared, `fields of GraphQL type ${typeName}`).to.deep.equal(expected);
  }

  it('declares every field of the record and of its nested items, in order, with the same type and nullability', () => {
    expectFields('LearningOpportunity', json);
    for (const name of ['Session', 'Location', 'Deadline', 'Faq', 'ExternalReview', 'Accolade', 'Provider', 'Price'])
      expect(objects.has(name), name).to.equal(true);
  });
});
