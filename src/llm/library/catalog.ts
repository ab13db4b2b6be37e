// The model library: the GGUF files in MODELS_DIR and what their metadata says (name, size,
// architecture, parameters, quantization, context length, licence). Only headers are read.
import fs from 'node:fs';
import path from 'node:path';
import { invalidArgument } from '../../errors.js';
import { GgufError, GgufMetadata, modelInfo, readGguf, type GgufFile } from '../gguf/index.js';

export interface CatalogEntry {
  /** `general.name`, or the file name without .gguf. */
  name: string;
  /** Relative to MODELS_DIR. */
  file: string;
  sizeBytes: number;
  architecture: string;
  parameters: number;
  quantization: string;
  contextLength: number | null;
  license: string | null;
  licenseLink: string | null;
  chatTemplate: boolean;
}

export interface CatalogProblem {
  file: string;
  error: string;
}

export async function describeGguf(modelsDir: string, relative: string, file?: GgufFile): Promise<CatalogEntry> {
  const full = path.join(modelsDir, relative);
  const gguf = file ?? (await readGguf(full));
  const info = modelInfo(gguf);
  const meta = GgufMetadata.of(gguf);
  return {
    name: info.name ?? path.basename(relative).replace(/\.gguf$/i, ''),
    file: relative,
    sizeBytes: fs.statSync(full).size,
    architecture: info.architecture,
    parameters: info.parameterCount,
    quantization: info.quantization,
    contextLength: info.contextLength,
    license: info.license,
    licenseLink: meta.optString('general.license.link') ?? null,
    chatTemplate: info.chatTemplate !== null,
  };
}

/** Every .gguf file under MODELS_DIR (one level of subfolders), with the unreadable ones apart. */
export async function listCatalog(modelsDir: string): Promise<{ models: CatalogEntry[]; problems: CatalogProblem[] }> {
  const models: CatalogEntry[] = [];
  const problems: CatalogProblem[] = [];
  if (!fs.existsSync(modelsDir)) return { models, problems };
  const files: string[] = [];
  for (const entry of fs.readdirSync(modelsDir, { withFileTypes: true })) {
    if (entry.isFile() && /\.gguf$/i.test(entry.name)) files.push(entry.name);
    else if (entry.isDirectory()) {
      for (const inner of fs.readdirSync(path.join(modelsDir, entry.name), { withFileTypes: true })) {
        if (inner.isFile() && /\.gguf$/i.test(inner.name)) files.push(path.join(entry.name, inner.name));
      }
    }
  }
  for (const file of files.sort()) {
    try {
      models.push(await describeGguf(modelsDir, file));
    } catch (err) {
      problems.push({ file, error: (err as Error).message });
    }
  }
  return { models, problems };
}

/**
 * A file named relative to MODELS_DIR, refused (400 naming it) if it or a folder on its way is a
 * symbolic link that resolves outside MODELS_DIR.
 */
export function checkInModelsDir(modelsDir: string, relative: string): void {
  const root = fs.realpathSync(modelsDir);
  const real = fs.realpathSync(path.join(modelsDir, relative));
  const inside = path.relative(root, real);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) {
    throw invalidArgument(`"${relative}" is a symbolic link that leads outside MODELS_DIR; only files inside MODELS_DIR are served`, 'name');
  }
  if (!fs.statSync(real).isFile()) throw invalidArgument(`"${relative}" in MODELS_DIR is not a file`, 'name');
}

/**
 * The catalogue entry a user names by its name or its file (relative to MODELS_DIR). A file named
 * directly that is no readable GGUF model is a 400 with the reader's message.
 */
export async function findInCatalog(modelsDir: string, nameOrFile: string): Promise<CatalogEntry | undefined> {
  const direct = path.normalize(nameOrFile);
  if (!direct.startsWith('..') && !path.isAbsolute(direct) && /\.gguf$/i.test(direct) && fs.existsSync(path.join(modelsDir, direct))) {
    checkInModelsDir(modelsDir, direct);
    try {
      return await describeGguf(modelsDir, direct);
    } catch (err) {
      if (err instanceof GgufError) throw invalidArgument(`"${direct}" is not a GGUF model this host can read: ${err.message}`, 'name');
      throw err;
    }
  }
  const { models } = await listCatalog(modelsDir);
  return models.find((m) => m.name === nameOrFile) ?? models.find((m) => m.file === nameOrFile || path.basename(m.file) === nameOrFile);
}
