// Which key seals the receivers' signing secrets. SECRET_ENCRYPTION_KEY when set (config.ts refuses
// to start production without it). Otherwise, outside production, a key generated once under
// DATA_DIR (file `secret-key`, mode 0600) and reused: the embedded default needs no setup, and a
// development DATABASE_URL works too, with a warning, since another machine sharing that database
// would not hold the file.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Config } from '../../kernel/config.ts';
import type { Logger } from '../../kernel/logger.ts';
import { createSecretKeyring, type SecretKeyring } from './secret-box.ts';

const KEY_FILE = 'secret-key';

export async function resolveSecretKeyring(
  config: Pick<Config, 'secretKeys' | 'dataDir' | 'databaseUrl'>,
  logger: Logger,
): Promise<SecretKeyring> {
  const { key, previous } = config.secretKeys;
  if (key) return createSecretKeyring({ current: key, previous });
  const file = resolve(config.dataDir, KEY_FILE);
  let generated: Buffer;
  if (existsSync(file)) {
    generated = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
  } else {
    generated = randomBytes(32);
    await mkdir(config.dataDir, { recursive: true });
    // 'wx': two processes starting together must not each write their own key.
    await writeFile(file, `${generated.toString('base64')}\n`, { mode: 0o600, flag: 'wx' }).catch(
      async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
        generated = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
      },
    );
  }
  if (generated.length !== 32)
    throw new Error(
      `${file} must hold the base64 of 32 bytes (delete it to generate a new key only if no receiver secret was sealed with it)`,
    );
  if (config.databaseUrl)
    logger.warn(
      { file },
      'SECRET_ENCRYPTION_KEY is not set: receiver secrets are sealed with a key kept in DATA_DIR; set the variable wherever DATABASE_URL is shared',
    );
  return createSecretKeyring({ current: generated, previous });
}
