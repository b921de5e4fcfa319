// Validates real HTTP responses against schema/openapi.json with ajv (JSON Schema 2020-12, the
// dialect of OpenAPI 3.1). Schemas are compiled by JSON pointer into the document itself, so their
// `#/components/...` references resolve exactly as an OpenAPI tool would resolve them.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { decodeCursor } from '../../src/feed/cursor.ts';
import { OPENAPI_PATH } from '../../src/http/v1/openapi-document.ts';

// ajv-formats is CommonJS: under ESM its default import is the plugin function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export type Json = Record<string, unknown>;
export type OpenApiDoc = Json & { paths: Record<string, Json>; components: Record<string, Record<string, Json>> };
export const HTTP_METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace'] as const;
const DOC_ID = 'openapi.json';

export function loadOpenApiDocument(): OpenApiDoc {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenApiDoc;
}

const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** Follows a local pointer ("#/a/b") through the document. */
export function atPointer(doc: unknown, pointer: string): unknown {
  if (!pointer.startsWith('#')) throw new Error(`not a local reference: ${pointer}`);
  let node: unknown = doc;
  for (const raw of pointer.slice(1).split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !(key in node))
      throw new Error(`unresolvable reference ${pointer}`);
    node = (node as Json)[key];
  }
  return node;
}

/** The object at `pointer`, following $ref chains; returns it with the pointer where it really lives. */
export function deref(doc: OpenApiDoc, pointer: string): { node: Json; pointer: string } {
  let node = atPointer(doc, pointer) as Json;
  for (let hops = 0; typeof node.$ref === 'string'; hops++) {
    if (hops > 10) throw new Error(`reference loop at ${pointer}`);
    pointer = node.$ref;
    node = atPointer(doc, pointer) as Json;
  }
  return { node, pointer };
}

/** The document template (e.g. /v1/learning-opportunities/{id}) matching a concrete path. */
export function matchPathTemplate(doc: OpenApiDoc, path: string): string | undefined {
  return Object.keys(doc.paths).find((template) => {
    const pattern = template
      .split(/\{[^}]+\}/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]+');
    return new RegExp(`^${pattern}$`).test(path);
  });
}

/** Headers the service sets itself (not Node's nor the HTTP layer's, as Date or Content-Length). */
const OWN_HEADERS = [
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'etag',
  'cache-control',
  'www-authenticate',
  'allow',
];

export type ObservedResponse = { method: string; path: string; status: number; headers: Headers; text: string };

export class OpenApiValidator {
  readonly doc: OpenApiDoc;
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(doc: OpenApiDoc = loadOpenApiDocument()) {
    this.doc = doc;
    this.ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
    addFormats(this.ajv);
    // The document's own format: a cursor the service made (it decodes to a feed position).
    this.ajv.addFormat('feed-cursor', (value: string) => decodeCursor(value) !== null);
    // The document's top-level members are OpenAPI, not JSON Schema: tell strict mode so.
    this.ajv.addVocabulary([
      'openapi',
      'info',
      'servers',
      'security',
      'tags',
      'paths',
      'components',
      'webhooks',
      'jsonSchemaDialect',
    ]);
    this.ajv.addSchema(doc, DOC_ID);
  }

  /** A validator for the schema at `pointer` in the document. */
  schemaAt(pointer: string): ValidateFunction {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOC_ID}${pointer}` });
      this.compiled.set(pointer, validate);
    }
    return validate;
  }

  /** Problems found (empty when the response conforms). */
  check(res: ObservedResponse): string[] {
    const where = `${res.method} ${res.path} -> ${res.status}`;
    const template = matchPathTemplate(this.doc, res.path.split('?')[0]!);
    if (!template) return [`${where}: path not in the document`];
    const pathPointer = `#/paths/${escapePointer(template)}`;
    const item = this.doc.paths[template]!;
    const method = res.method.toLowerCase();
    // A 405 answers a method the path does not have: it is documented on the path's GET.
    const opMethod = item[method] ? method : res.status === 405 ? 'get' : undefined;
    if (!opMethod) return [`${where}: method not in the document`];
    const responses = (item[opMethod] as { responses: Json }).responses;
    if (!(String(res.status) in responses)) return [`${where}: status not documented`];
    const { node: response, pointer } = deref(this.doc, `${pathPointer}/${opMethod}/responses/${res.status}`);
    const problems: string[] = [];

    for (const name of Object.keys((response.headers ?? {}) as Json)) {
      const header = deref(this.doc, `${pointer}/headers/${escapePointer(name)}`);
      const value = res.headers.get(name);
      if (value === null) {
        if (header.node.required) problems.push(`${where}: missing header ${name}`);
        continue;
      }
      const validate = this.schemaAt(`${header.pointer}/schema`);
      if (!validate(value)) problems.push(`${where}: header ${name}=${value}: ${this.ajv.errorsText(validate.errors)}`);
    }

    // The service's own headers, when sent, are declared (a generated client reads only those).
    const declared = new Set(Object.keys((response.headers ?? {}) as Json).map((name) => name.toLowerCase()));
    for (const name of OWN_HEADERS)
      if (res.headers.has(name) && !declared.has(name)) problems.push(`${where}: header ${name} not declared`);

    const content = response.content as Record<string, Json> | undefined;
    if (res.method === 'HEAD' || !content) {
      if (res.text !== '') problems.push(`${where}: a body where the document declares none`);
      return problems;
    }
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (!(mediaType in content))
      return [...problems, `${where}: content type ${mediaType} not documented (${Object.keys(content).join(', ')})`];
    if (!/[/+]json$/.test(mediaType)) {
      // A text body (the calendar): checked against its schema as the string it is.
      const validateText = this.schemaAt(`${pointer}/content/${escapePointer(mediaType)}/schema`);
      if (!validateText(res.text)) problems.push(`${where}: body: ${this.ajv.errorsText(validateText.errors)}`);
      return problems;
    }
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      return [...problems, `${where}: body is not JSON`];
    }
    const validate = this.schemaAt(`${pointer}/content/${escapePointer(mediaType)}/schema`);
    if (!validate(body)) problems.push(`${where}: body: ${this.ajv.errorsText(validate.errors)}`);
    return problems;
  }
}
