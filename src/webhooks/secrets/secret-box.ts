// Signing secrets at rest: AES-256-GCM under SECRET_ENCRYPTION_KEY. Each stored secret carries the
// id of the key that sealed it (the first 8 hex digits of the key's SHA-256), so that a keyring of
// the current and the previous key opens every row during a key rotation. The receiver id is the
// additional authenticated data: a ciphertext copied onto another receiver does not open.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export type SealedSecret = { ciphertext: Buffer; keyId: string };

export type SecretKeyring = {
  /** The id of the key new secrets are sealed with. */
  readonly currentKeyId: string;
  /** Ids of every key this keyring opens (current first). */
  readonly keyIds: readonly string[];
  seal: (secret: string, receiverId: string) => SealedSecret;
  /** Throws SecretKeyError when the key is not held or the ciphertext does not authenticate. */
  open: (sealed: SealedSecret, receiverId: string) => string;
};

/** Raised when a stored secret cannot be opened; its message never contains secret material. */
export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export function createSecretKeyring(keys: { current: Buffer; previous?: Buffer | undefined }): SecretKeyring {
  const byId = new Map<string, Buffer>([[keyIdOf(keys.current), keys.current]]);
  if (keys.previous) byId.set(keyIdOf(keys.previous), keys.previous);
  const currentKeyId = keyIdOf(keys.current);
  return {
    currentKeyId,
    keyIds: [...byId.keys()],
    seal(secret, receiverId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', keys.current, iv);
      cipher.setAAD(Buffer.from(receiverId));
      const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return { ciphertext: Buffer.concat([iv, body, cipher.getAuthTag()]), keyId: currentKeyId };
    },
    open({ ciphertext, keyId }, receiverId) {
      const key = byId.get(keyId);
      if (!key)
        throw new SecretKeyError(
          `the secret of receiver ${receiverId} is sealed with key ${keyId}, which is neither SECRET_ENCRYPTION_KEY nor SECRET_ENCRYPTION_KEY_PREVIOUS`,
        );
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, ciphertext.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(receiverId));
        decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
        return Buffer.concat([
          decipher.update(ciphertext.subarray(IV_BYTES, ciphertext.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        throw new SecretKeyError(`the secret of receiver ${receiverId} does not authenticate under key ${keyId}`);
      }
    },
  };
}
