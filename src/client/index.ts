// Public entry of the /v1 consumer client: `import { createCatalogClient, walk } from
// 'learning-opportunities-data-service/client'` (package.json "exports"). It is TypeScript, run by
// Node 24's type stripping; Node does not strip types under node_modules, so consume it from a
// path outside node_modules (npm link, a file: dependency or a workspace, which npm installs as a
// symlink) or through a TypeScript-aware loader or bundler. See docs/operations.md.
export { createCatalogClient, type CallOptions, type CatalogClient, type CatalogClientOptions } from './catalog-client.ts';
export { CatalogClientError, CatalogHttpError, CatalogNetworkError, CatalogResponseError } from './errors.ts';
export { parseRetryAfter, type RetryInfo } from './request.ts';
export type * from './types.ts';
export { compareTimestamps, walk, type WalkEntry, type WalkOptions, type WalkProgress, type WalkResult } from './walk.ts';
export { changeOf, sync, type SyncBatch, type SyncChange, type SyncOptions, type SyncProgress, type SyncResult, type SyncState } from './sync.ts';
