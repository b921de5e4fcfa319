// The receiver kit: what a consumer needs to accept this service's webhook deliveries safely.
//   verifyDelivery: check one delivery (signature over the raw bytes, timestamp window, event shape),
//                   SERVICE_V1 or Standard Webhooks (detected from the headers); fails closed:
//                   without a secret every delivery is refused unless allowUnsigned: true
//   webhookReceiver: an express / node:http handler that verifies, de-duplicates, acknowledges at
//                    once and processes afterwards
//   signPayload, deliveryHeaders: sign test deliveries exactly as the service does
//   repairFromFeed: fetch the events a receiver missed from the change feed (GET /v1/events)
//   applyEvent / shouldApply with a VersionStore (MemoryVersionStore, FileVersionStore): apply an
//                    event only when its resource.version is newer than the one held
export * from './event.ts';
export { deliveryEventId, detectScheme, verifyDelivery, DEFAULT_TOLERANCE_MS, NO_SECRET_MESSAGE } from './verify.ts';
export type {
  HeaderSource,
  VerifiedOther,
  VerifyFailure,
  VerifyFailureReason,
  VerifyOptions,
  VerifyResult,
  VerifySuccess,
} from './verify.ts';
export { webhookReceiver, DEFAULT_MAX_BODY_BYTES } from './middleware.ts';
export type { ReceiverLogger, WebhookReceiverHandler, WebhookReceiverOptions } from './middleware.ts';
export { MemorySeenStore } from './seen-store.ts';
export type { SeenStore } from './seen-store.ts';
export {
  deliveryHeaders,
  signatureDigest,
  signPayload,
  signStandard,
  standardSecretKey,
  standardSignatureDigest,
  STANDARD_SECRET_PREFIX,
  USER_AGENT,
} from './sign.ts';
export type { SignatureScheme } from './sign.ts';
export { FeedGapError, repairFromFeed } from './feed-repair.ts';
export type { FeedRepairOptions, FeedRepairResult } from './feed-repair.ts';
export {
  applyEvent,
  DEFAULT_TOMBSTONE_TTL_MS,
  FileVersionStore,
  MemoryVersionStore,
  shouldApply,
} from './version-store.ts';
export type { ApplyResult, MemoryVersionStoreOptions, VersionSnapshot, VersionStore } from './version-store.ts';
