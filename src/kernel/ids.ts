// Record ids (UUIDs) as callers give them: one check, shared by the catalog, GraphQL, /v1 and the CLI.
import { badInput } from './errors.ts';

/** A UUID in any letter case (ids are stored and answered in lower case). */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Validates a record id given by a caller; throws BAD_USER_INPUT naming the parameter. */
export function parseId(value: unknown, name = 'id'): string {
  if (typeof value !== 'string' || !UUID_RE.test(value)) throw badInput([{ name, reason: 'must be a UUID' }]);
  return value.toLowerCase();
}
