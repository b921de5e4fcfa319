// The records of a learningOpportunities page handed to the response as the stored bytes, when the
// query asks for exactly what is stored: `results` selecting every field of LearningOpportunity (and
// of each nested type) once, in the schema's order, without aliases, directives or __typename. The
// answer graphql-js would give is then byte for byte the stored documents (the REST page's bytes,
// test/catalog/same-bytes.test.ts), so they are not parsed and walked field by field: the resolver
// holds the page's text and answers `results: []`, compiled-execution.ts puts a token in its place,
// and responseSizeLimit (response-size.ts) writes the text where the token is. Any other selection is
// executed as before. Only for queries run by compiled-execution.ts (which sets `storedPages`).
import {
  Kind,
  getNamedType,
  isObjectType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql';

/** The texts of the held pages, by the response key of their learningOpportunities field. */
export type StoredPages = Map<string, string>;

const wholeRecordOf = new WeakMap<GraphQLObjectType, string>();
const decided = new WeakMap<FieldNode, boolean>();
// By the result's data object (Apollo copies the result object itself before stringifyResult).
const texts = new WeakMap<object, string[]>();
const token = (i: number) => `\u0000stored-results:${i}`;

/** Every field of the type and of its nested object types, in the schema's order. */
function wholeSelection(type: GraphQLObjectType): string {
  let text = wholeRecordOf.get(type);
  if (text === undefined) {
    text = Object.values(type.getFields())
      .map((field) => {
        const named = getNamedType(field.type);
        return isObjectType(named) ? `${field.name}{${wholeSelection(named)}}` : field.name;
      })
      .join(' ');
    wholeRecordOf.set(type, text);
  }
  return text;
}

/** The selection as the same notation (fragments inlined), or null for anything not plain. */
function plainSelection(set: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>): string | null {
  const parts: string[] = [];
  for (const selection of set.selections) {
    if (selection.directives?.length) return null;
    let part: string | null;
    if (selection.kind === Kind.FIELD) {
      if ((selection.alias && selection.alias.value !== selection.name.value) || selection.name.value.startsWith('__'))
        return null;
      part = selection.selectionSet
        ? `${selection.name.value}{${plainSelection(selection.selectionSet, fragments) ?? ''}}`
        : selection.name.value;
      if (selection.selectionSet && part.endsWith('{}')) return null;
    } else {
      const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments[selection.name.value] : selection;
      if (!fragment || fragment.directives?.length) return null;
      part = plainSelection(fragment.selectionSet, fragments);
    }
    if (part === null) return null;
    parts.push(part);
  }
  return parts.join(' ');
}

/** Whether this learningOpportunities field's `results` asks for exactly the stored record. */
export function selectsStoredRecords(info: GraphQLResolveInfo): boolean {
  const [node, more] = info.fieldNodes;
  if (!node?.selectionSet || more) return false;
  let answer = decided.get(node);
  if (answer === undefined) {
    const candidates = node.selectionSet.selections.filter((s) => s.kind !== Kind.FIELD || s.name.value === 'results');
    const only = candidates.length === 1 ? candidates[0]! : null;
    const results = only?.kind === Kind.FIELD ? only : null;
    const page = getNamedType(info.returnType);
    const record = isObjectType(page) ? getNamedType(page.getFields().results?.type) : undefined;
    answer =
      results !== null &&
      !results.alias &&
      !results.directives?.length &&
      results.selectionSet !== undefined &&
      isObjectType(record) &&
      plainSelection(results.selectionSet, info.fragments) === wholeSelection(record);
    decided.set(node, answer);
  }
  return answer;
}

/** The data with a token for each held page's results; the texts kept for spliceStoredPages. */
export function withStoredPages<T extends { data?: Record<string, unknown> | null }>(result: T, pages: StoredPages): T {
  if (pages.size === 0 || !result.data) return result;
  const held: string[] = [];
  for (const [key, text] of pages) {
    (result.data[key] as { results: unknown }).results = token(held.length);
    held.push(text);
  }
  texts.set(result.data, held);
  return result;
}

/** The JSON of a result from withStoredPages with each token replaced by its page's text. */
export function spliceStoredPages(result: { data?: unknown }, json: string): string {
  const held = result.data && typeof result.data === 'object' ? texts.get(result.data) : undefined;
  if (!held) return json;
  let out = json;
  held.forEach((text, i) => {
    const quoted = JSON.stringify(token(i));
    const at = out.indexOf(quoted);
    out = out.slice(0, at) + text + out.slice(at + quoted.length);
  });
  return out;
}
