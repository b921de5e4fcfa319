// The endpoints of /v1, the one table of them: each path with its methods and the scope its key
// must hold (several: one of them; null: public), and `queryKey`, the scope a key given in the URL
// (`?key=`) must hold on the one path that takes it there (the calendar: calendar apps send no
// headers); every other path reads its key from Authorization alone. The dispatcher (dispatcher.ts)
// serves exactly these paths; the OpenAPI document's test compares them with the document, and the
// 100-continue edge (http/expect-continue.ts) asks here which /v1 paths take a key. Paths match
// exactly (case-sensitive, no trailing slash); `/:name` at the end matches one non-empty path segment.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal, Scope } from '../../auth/api-keys.ts';

export const V1_PREFIX = '/v1/';
const READ_METHODS: readonly string[] = ['GET', 'HEAD'];

export type V1RouteSpec = {
  methods: readonly string[];
  scope: Scope | readonly Scope[] | null;
  queryKey?: Scope;
};

const ROUTES = {
  '/v1/learning-opportunities': { methods: READ_METHODS, scope: 'catalog:read' },
  '/v1/learning-opportunities/:id': { methods: READ_METHODS, scope: 'catalog:read' },
  '/v1/events': { methods: READ_METHODS, scope: 'catalog:read' },
  '/v1/events/head': { methods: READ_METHODS, scope: 'catalog:read' },
  // A calendar subscription: a catalog:read key in Authorization, or a calendar:read key there or in ?key=.
  '/v1/calendar.ics': { methods: READ_METHODS, scope: ['calendar:read', 'catalog:read'], queryKey: 'calendar:read' },
  // Public: a client needs the OpenAPI document before it has a key.
  '/v1/openapi.json': { methods: READ_METHODS, scope: null },
} as const satisfies Record<string, V1RouteSpec>;

export type V1Route = keyof typeof ROUTES;
export const V1_ROUTES: Readonly<Record<V1Route, V1RouteSpec>> = ROUTES;

/** What an endpoint is handed once admitted: its path, its query string (without `?`), the key's principal (null on a public path). */
export type V1Request = { path: string; query: string; principal: Principal | null };
export type V1Serve = (req: IncomingMessage, res: ServerResponse, at: V1Request) => Promise<void>;

const EXACT = new Map<string, V1Route>();
const ONE_SEGMENT: { prefix: string; route: V1Route }[] = [];
for (const route of Object.keys(V1_ROUTES) as V1Route[]) {
  const param = route.lastIndexOf('/:');
  if (param < 0) EXACT.set(route, route);
  else ONE_SEGMENT.push({ prefix: route.slice(0, param + 1), route });
}

/** The route of `path` (without its query string), or null when /v1 has no such endpoint. */
export function routeOf(path: string): V1Route | null {
  const exact = EXACT.get(path);
  if (exact !== undefined) return exact;
  for (const { prefix, route } of ONE_SEGMENT) {
    if (path.length > prefix.length && path.startsWith(prefix) && !path.includes('/', prefix.length)) return route;
  }
  return null;
}

/**
 * The scopes of which a key must hold one for a /v1 path (null: the path is public). An unknown
 * /v1 path takes a catalog:read key as well: its 404 is no reason to invite a body.
 */
export function v1KeyScopes(path: string): readonly Scope[] | null {
  const route = routeOf(path);
  const scope = route === null ? 'catalog:read' : V1_ROUTES[route].scope;
  return scope === null ? null : typeof scope === 'string' ? [scope] : scope;
}
