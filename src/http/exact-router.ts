// Paths match exactly: case-sensitive and without ignoring a trailing slash, for the app and every
// router. Express's defaults let `/METRICS`, `/metrics/` and `POST /GraphQL` through to the
// handlers of `/metrics` and `/graphql`, past a proxy's rules written for the exact paths.
import { type Express, Router } from 'express';

export const EXACT_ROUTING = { caseSensitive: true, strict: true } as const;

export const exactRouter = (): Router => Router(EXACT_ROUTING);

export function routeExactly(app: Express): void {
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
}
