// DATA_DIR holds key hashes, vectors, request and shadow bodies and the token secret: every folder
// the host makes or uses in it is 0700 and every file 0600, set with chmod after creation, so that
// neither the umask nor whoever made DATA_DIR (an operator, a volume mount) decides.
import fs from 'node:fs';
import path from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** chmod, except on a path this process does not own (EPERM): that one stays as its owner left it. */
function chmod(p: string, mode: number): void {
  try {
    fs.chmodSync(p, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOENT') throw err;
  }
}

/** Makes `dir` and any missing parents 0700 (each one made here); an existing `dir` is set to 0700 too. */
export function privateDir(dir: string): void {
  const missing: string[] = [];
  let d = path.resolve(dir);
  while (!fs.existsSync(d)) {
    missing.unshift(d);
    const parent = path.dirname(d);
    if (parent === d) break;
    d = parent;
  }
  for (const m of missing) {
    try {
      fs.mkdirSync(m, { mode: PRIVATE_DIR_MODE });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  for (const m of missing) chmod(m, PRIVATE_DIR_MODE);
  if (missing.length === 0) chmod(dir, PRIVATE_DIR_MODE);
}

/** Sets an existing file to 0600 (a missing one is left missing). */
export function privateFile(file: string): void {
  chmod(file, PRIVATE_FILE_MODE);
}

/**
 * Before SQLite opens `file`: creates it empty with mode 0600 if missing, and sets it and any
 * journal beside it to 0600. SQLite gives the -wal, -shm and -journal files it makes later the
 * database file's own mode.
 */
export function privateSqliteFile(file: string): void {
  privateDir(path.dirname(file));
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE_MODE));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) privateFile(f);
}
