// Public entry of the /v1 consumer client: `import { createCatalogClient, walk } from '@lods/client'`.
// Published as JavaScript + .d.ts built by tsc (`npm pack` builds it); the service and the tests
// use these sources directly.
export {
  createCatalogClient,
  type CallOptions,
  type CatalogClient,
  type CatalogClientOptions,
} from './catalog-client.ts';
export { CatalogClientError, CatalogHttpError, CatalogNetworkError, CatalogResponseError } from './errors.ts';
export { parseRetryAfter, type RetryInfo } from './request.ts';
export type * from './types.ts';
export {
  compareTimestamps,
  walk,
  type WalkEntry,
  type WalkOptions,
  type WalkProgress,
  type WalkResult,
} from './walk.ts';
export {
  changeOf,
  sync,
  type SyncBatch,
  type SyncChange,
  type SyncOptions,
  type SyncProgress,
  type SyncResult,
  type SyncState,
  viewFilter,
} from './sync.ts';
