// The signature scheme of a receiver (issue 21) and the rules of its secret: SERVICE_V1 (the
// service's own x-service-signature, the default) takes any 16-512 printable ASCII characters, a
// whsec_ one included (used as it is); STANDARD_WEBHOOKS takes `whsec_` + base64 of 24..64 bytes,
// generated here (32 random bytes) when none is given, and shown once by the call that made it. The
// names: in the code and the receiver kit `service-v1 | standard-webhooks`; GraphQL and the CLI's
// JSON `SERVICE_V1 | STANDARD_WEBHOOKS` (schemeName); the CLI's --scheme takes both (parseScheme);
// the receiver.signature_scheme column `service_v1 | standard_webhooks`.
import { randomBytes } from 'node:crypto';
import { badInput } from '../../kernel/errors.ts';

export const SIGNATURE_SCHEMES = ['service-v1', 'standard-webhooks'] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** The default grace of a Standard Webhooks rotation, and the longest one allowed (30 days). */
export const DEFAULT_GRACE_HOURS = 24;
export const MAX_GRACE_HOURS = 720;

const STANDARD_SECRET_RE = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
const KEY_BYTES = { min: 24, max: 64 };

/** A scheme as GraphQL's enum WebhookSignatureScheme names it (and the CLI's JSON prints it). */
export type SchemeName = 'SERVICE_V1' | 'STANDARD_WEBHOOKS';
export const schemeName = (scheme: SignatureScheme): SchemeName => scheme.toUpperCase().replace('-', '_') as SchemeName;

/** Every spelling parseScheme takes: `standard-webhooks` and `STANDARD_WEBHOOKS` alike. */
export const SCHEME_SPELLINGS: readonly string[] = [...SIGNATURE_SCHEMES, ...SIGNATURE_SCHEMES.map(schemeName)];

/** The scheme named `value` (CLI spelling, or GraphQL's enum name); undefined/null stays so. */
export function parseScheme(value: string | null | undefined): SignatureScheme | undefined {
  if (value === undefined || value === null) return undefined;
  const scheme = value.toLowerCase().replaceAll('_', '-');
  if (!(SIGNATURE_SCHEMES as readonly string[]).includes(scheme)) {
    throw badInput([
      { name: 'signatureScheme', reason: `unknown signature scheme ${value}; known: ${SIGNATURE_SCHEMES.join(', ')}` },
    ]);
  }
  return scheme as SignatureScheme;
}

/** The column value of a scheme. */
export const schemeColumn = (scheme: SignatureScheme): string => scheme.replace('-', '_');

export const STANDARD_SECRET_RULE = 'a Standard Webhooks secret is whsec_ followed by the base64 of 24 to 64 bytes';

/** True when `secret` is a Standard Webhooks secret (canonical base64 of 24..64 bytes after whsec_). */
export function isStandardSecret(secret: string): boolean {
  const match = STANDARD_SECRET_RE.exec(secret);
  if (!match) return false;
  const key = Buffer.from(match[1]!, 'base64');
  return key.length >= KEY_BYTES.min && key.length <= KEY_BYTES.max && key.toString('base64') === match[1];
}

/** `secret` when it is a Standard Webhooks secret; a BAD_USER_INPUT on `secret` otherwise. */
export function parseStandardSecret(secret: string): string {
  if (!isStandardSecret(secret))
    throw badInput([
      {
        name: 'secret',
        reason: `must be whsec_ followed by the base64 of ${KEY_BYTES.min} to ${KEY_BYTES.max} bytes (a STANDARD_WEBHOOKS receiver)`,
      },
    ]);
  return secret;
}

/** A new Standard Webhooks secret: whsec_ + base64 of 32 random bytes. */
export function generateStandardSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The grace of a rotation in hours (default DEFAULT_GRACE_HOURS): an integer 0..MAX_GRACE_HOURS, 0 = none. */
export function parseGraceHours(value: number | null | undefined): number {
  if (value === undefined || value === null) return DEFAULT_GRACE_HOURS;
  if (!Number.isInteger(value) || value < 0 || value > MAX_GRACE_HOURS) {
    throw badInput([
      { name: 'graceHours', reason: `must be a whole number of hours from 0 (no grace) to ${MAX_GRACE_HOURS}` },
    ]);
  }
  return value;
}

/** Why SERVICE_V1 refuses a grace (the CLI and GraphQL both say it). */
export const NO_GRACE_FOR_SERVICE_V1 =
  'a SERVICE_V1 delivery carries one signature, so it cannot be signed with the old and the new secret during a grace. ' +
  'The receiver must accept the new secret first: give it both (with the receiver kit, WEBHOOK_SECRET=<new> and WEBHOOK_SECRET_PREVIOUS=<old>), ' +
  'then rotate without --grace-hours, and drop the old one once deliveries verify; or switch the receiver to standard-webhooks, whose rotation signs with both';
