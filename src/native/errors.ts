// The error contract of the native addon, as the TypeScript side reads it: every error the addon
// raises carries a `code` (NativeErrorCode in surface.ts), and an asynchronous failure carries
// the stack of the call that started the work (the addon creates the error at that moment).
// Wrappers that turn a native error into one of their own typed errors keep that stack.
import type { NativeErrorCode } from './surface.js';

/** The code of an error the addon raised, or undefined for any other value. */
export function nativeErrorCode(error: unknown): NativeErrorCode | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as Error & { code?: unknown }).code;
  return typeof code === 'string' ? (code as NativeErrorCode) : undefined;
}

/**
 * Gives `typed` the call stack of `native` under its own name and message, so that a typed
 * error made from a native one points at the caller's code rather than at the wrapper.
 */
export function withNativeStack<E extends Error>(typed: E, native: Error): E {
  const frames = native.stack?.split('\n').slice(1) ?? [];
  if (frames.length > 0) typed.stack = [`${typed.name}: ${typed.message}`, ...frames].join('\n');
  return typed;
}
