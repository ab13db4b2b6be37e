// Response-schema helpers shared by every route plugin.
import { errorBodySchema } from '../errors.js';

/** A route's response schemas plus the shared error shape for 4xx and 5xx. */
export function responses<T extends Record<number, unknown>>(ok: T) {
  return { ...ok, '4xx': errorBodySchema, '5xx': errorBodySchema };
}
