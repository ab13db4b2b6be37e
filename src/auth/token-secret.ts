// The HS256 signing secret: PLATFORM_TOKEN_SECRET when set, otherwise a random one made on first
// start in DATA_DIR/token-secret with mode 0600, so that tokens survive restarts.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { privateDir, privateFile } from '../store/private-files.js';

export const TOKEN_SECRET_FILE = 'token-secret';

export function resolveTokenSecret(dataDir: string, fromEnv: string | undefined): Uint8Array {
  if (fromEnv !== undefined) return new TextEncoder().encode(fromEnv);
  privateDir(dataDir);
  const file = path.join(dataDir, TOKEN_SECRET_FILE);
  try {
    // 'wx' fails if the file exists, so two processes starting at once cannot overwrite each other.
    fs.writeFileSync(file, crypto.randomBytes(48).toString('base64url') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  privateFile(file);
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret.length < 32) throw new Error(`${TOKEN_SECRET_FILE} in DATA_DIR is shorter than 32 characters; delete it to make a new one`);
  return new TextEncoder().encode(secret);
}
