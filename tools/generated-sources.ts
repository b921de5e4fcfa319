// What `npm run generate` writes, as pure functions of the record schema (src/catalog/record-schema.ts)
// and of the committed files, so that a test can tell a stale committed file.
//
// schema/openapi.json is hand-kept (info, paths, parameters, responses, the list, problem and
// pagination schemas): other changes edit it directly. The generator owns only the components
// schemas of the record (every zod schema with a meta `id`): it replaces them in place, keeping the
// rest of the document and its key order, and marks each with a `$comment`.
// The client's record types are written from those same components (JSON Schema -> TypeScript).
// schema/combined/schema.graphql is the whole GraphQL schema in one file, printed from the per-team
// SDL files the service loads (each of those is a fragment: it extends Query and uses the others' types).
import { resolve } from 'node:path';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { printSchema } from 'graphql';
import { z } from 'zod';
import { loadTypeDefs } from '../src/graphql/server.ts';
import { PUBLIC_RECORD_ID } from '../src/catalog/record-schema.ts';
import { OPENAPI_PATH } from '../src/http/openapi.ts';

export { OPENAPI_PATH };
export const CLIENT_TYPES_PATH = resolve(import.meta.dirname, '../packages/client/src/record-types.ts');
export const COMBINED_SDL_PATH = resolve(import.meta.dirname, '../schema/combined/schema.graphql');

type JsonSchema = { [keyword: string]: unknown };
const SOURCE = 'src/catalog/record-schema.ts';
const COMMENT = `Generated from ${SOURCE} by npm run generate; edit it there.`;

/** The record's component schemas: the public record and every schema it references by id. */
export function recordComponents(): Record<string, JsonSchema> {
  // Ids are the schemas' meta (zod's global registry); only those the record reaches are ours.
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: 'input', // the JSON side of the timestamp codecs
    uri: (id) => `#/components/schemas/${id}`,
    // The integer bounds zod adds for z.int() say nothing to a reader.
    override: ({ jsonSchema }) => {
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
    },
  }) as { schemas: Record<string, JsonSchema> };
  const components: Record<string, JsonSchema> = {};
  const visit = (id: string) => {
    if (id in components) return;
    const schema: JsonSchema = { $comment: COMMENT, ...schemas[id]! };
    delete schema.$schema; // the document's dialect applies
    delete schema.$id; // the component's place is its id
    components[id] = schema;
    for (const ref of JSON.stringify(schema).matchAll(/"#\/components\/schemas\/(\w+)"/g)) visit(ref[1]!);
  };
  visit(PUBLIC_RECORD_ID);
  return components;
}

/** The OpenAPI document `current` with the record's components regenerated (as file text). */
export function generateOpenApi(current: string): string {
  const doc = JSON.parse(current) as { components: { schemas: Record<string, JsonSchema> } };
  Object.assign(doc.components.schemas, recordComponents());
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** TypeScript declarations of the record's components, for the client. */
export function generateClientTypes(): string {
  const lines = [
    `// Generated from ${SOURCE} (through the OpenAPI components) by \`npm run generate\`: do not edit.`,
    '// The public /v1 record as a consumer sees it: plain JSON, timestamps as strings.',
    '',
  ];
  for (const [name, schema] of Object.entries(recordComponents())) {
    if (typeof schema.description === 'string') lines.push(`/** ${schema.description} */`);
    lines.push(`export type ${name} = ${tsType(schema, '')};`, '');
  }
  return lines.join('\n');
}

function tsType(schema: JsonSchema, indent: string): string {
  if (typeof schema.$ref === 'string') return schema.$ref.split('/').pop()!;
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as JsonSchema[]).map((s) => tsType(s, indent)).join(' | ');
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => `'${String(v)}'`).join(' | ');
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  return types.map((type) => primitive(type, schema, indent)).join(' | ');
}

function primitive(type: string, schema: JsonSchema, indent: string): string {
  switch (type) {
    case 'string':
    case 'boolean':
    case 'null':
      return type;
    case 'integer':
    case 'number':
      return 'number';
    case 'array':
      return `${wrap(tsType(schema.items as JsonSchema, indent))}[]`;
    case 'object': {
      const inner = `${indent}  `;
      const required = new Set(schema.required as string[]);
      const members = Object.entries(schema.properties as Record<string, JsonSchema>).map(([key, property]) => {
        const doc = typeof property.description === 'string' ? `${inner}/** ${property.description} */\n` : '';
        return `${doc}${inner}${key}${required.has(key) ? '' : '?'}: ${tsType(property, inner)};`;
      });
      return `{\n${members.join('\n')}\n${indent}}`;
    }
    default:
      throw new Error(`no TypeScript for JSON Schema type ${type}`);
  }
}

const wrap = (type: string) => (type.includes(' ') ? `(${type})` : type);

/** The service's whole GraphQL schema as one self-contained SDL file (for codegen and other tooling). */
export function generateCombinedSdl(): string {
  const header = [
    '# The whole internal GraphQL schema in one file, for codegen and other tools: give them this file.',
    '# Generated from schema/*.graphql (the fragments the service loads) by `npm run generate`: do not edit.',
  ];
  return `${header.join('\n')}\n\n${printSchema(makeExecutableSchema({ typeDefs: loadTypeDefs() }))}\n`;
}
