// MODELS_DIR at start: the host makes it when it is missing, so that an operator has a folder to
// copy GGUF files into. What happened is said on the start line (start-line.ts).
import fs from 'node:fs';

/** What became of MODELS_DIR at start: it was there, it was made, or it could not be made. */
export type ModelsDirState = { kind: 'present' } | { kind: 'created' } | { kind: 'unavailable'; reason: string };

/**
 * Makes MODELS_DIR (mode 0755: the GGUF files in it are not secrets, and operators copy files in)
 * when it is missing. A failure is reported, not fatal: a host that serves no LLM does not need it.
 */
export function ensureModelsDir(dir: string): ModelsDirState {
  if (fs.existsSync(dir)) return { kind: 'present' };
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.chmodSync(dir, 0o755); // mkdir's mode is narrowed by the umask
    return { kind: 'created' };
  } catch (err) {
    return { kind: 'unavailable', reason: (err as Error).message };
  }
}
