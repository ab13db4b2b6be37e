// The cursor of a scroll: an opaque string that carries the last id a page returned, so that the
// next page starts after it in id order. Ids that arrive meanwhile are seen if they sort after
// it; none is skipped or repeated. The encoding (base64url of a small JSON object with a
// version) is ours to change; clients only hand back what they were given.
import { invalidArgument } from '../errors.js';
import { MAX_ID_LENGTH } from './types.js';

const VERSION = 1;

export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ v: VERSION, after: lastId }), 'utf8').toString('base64url');
}

/** The id a cursor continues after; a 400 naming `param` for anything this host did not write. */
export function decodeCursor(cursor: string, param = 'cursor'): string {
  const bad = () => invalidArgument(`${param} is not a cursor from this store; pass next_cursor from the previous page as it is`, param);
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const v = value as { v?: unknown; after?: unknown } | null;
  if (typeof v !== 'object' || v === null || v.v !== VERSION || typeof v.after !== 'string' || v.after.length === 0 || v.after.length > MAX_ID_LENGTH) throw bad();
  return v.after;
}
