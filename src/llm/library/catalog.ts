// The model library: the GGUF files in MODELS_DIR and what their metadata says (name, size,
// architecture, parameters, quantization, context length, licence). Only headers are read.
import fs from 'node:fs';
import path from 'node:path';
import { invalidArgument } from '../../errors.js';
import { EMBEDDING_ARCHITECTURES } from '../embed/index.js';
import { GgufError, GgufMetadata, modelInfo, readGguf, type GgufFile } from '../gguf/index.js';
import { unsupportedReason } from './loadable.js';

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
  /** What a deployment of the file serves: embeddings (bert, nomic-bert) or chat and completions. */
  serves: 'embeddings' | 'chat';
  /** Why the engine cannot load the file (its architecture or tensor types), or null when it can. */
  unsupported: string | null;
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
    serves: EMBEDDING_ARCHITECTURES.includes(info.architecture) ? 'embeddings' : 'chat',
    unsupported: unsupportedReason(gguf, info.architecture),
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
export function checkInModelsDir(modelsDir: string, relative: string, param = 'name'): void {
  const root = fs.realpathSync(modelsDir);
  const real = fs.realpathSync(path.join(modelsDir, relative));
  const inside = path.relative(root, real);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) {
    throw invalidArgument(`"${relative}" is a symbolic link that leads outside MODELS_DIR; only files inside MODELS_DIR are served`, param);
  }
  if (!fs.statSync(real).isFile()) throw invalidArgument(`"${relative}" in MODELS_DIR is not a file`, param);
}

/** The file name without its folder and `.gguf`: the default name of a deployment of the file. */
export function fileStem(relative: string): string {
  return path.basename(relative).replace(/\.gguf$/i, '');
}

/**
 * `general.name` of a file in MODELS_DIR, or null when it has none or cannot be read now (missing,
 * broken). Headers only, kept per file while its size and modification time stay the same, so that
 * listing deployments does not read every file each time.
 */
export async function generalNameOf(modelsDir: string, relative: string): Promise<string | null> {
  const full = path.join(modelsDir, relative);
  let stat: fs.Stats;
  try {
    stat = await fs.promises.stat(full);
  } catch {
    return null;
  }
  const key = `${stat.size}:${stat.mtimeMs}`;
  const cached = generalNames.get(full);
  if (cached?.key === key) return cached.name;
  let name: string | null = null;
  try {
    name = modelInfo(await readGguf(full)).name ?? null;
  } catch {
    name = null;
  }
  if (generalNames.size >= 1024) generalNames.clear();
  generalNames.set(full, { key, name });
  return name;
}

const generalNames = new Map<string, { key: string; name: string | null }>();

/**
 * The catalogue entry a user names by its file (relative to MODELS_DIR, or its base name with or
 * without `.gguf`) or by its `general.name`. A file named directly that is no readable GGUF model
 * is a 400 with the reader's message. A `general.name` several files share (two quantizations of
 * one model) names none of them: a 400 that lists the files to choose from.
 */
export async function findInCatalog(modelsDir: string, nameOrFile: string, param = 'name'): Promise<CatalogEntry | undefined> {
  const direct = path.normalize(nameOrFile);
  if (!direct.startsWith('..') && !path.isAbsolute(direct) && /\.gguf$/i.test(direct) && fs.existsSync(path.join(modelsDir, direct))) {
    checkInModelsDir(modelsDir, direct, param);
    try {
      return await describeGguf(modelsDir, direct);
    } catch (err) {
      if (err instanceof GgufError) throw invalidArgument(`"${direct}" is not a GGUF model this host can read: ${err.message}`, param);
      throw err;
    }
  }
  const { models } = await listCatalog(modelsDir);
  const byName = models.filter((m) => m.name === nameOrFile);
  if (byName.length === 1) return byName[0];
  const byFile = models.filter((m) => m.file === nameOrFile || path.basename(m.file) === nameOrFile || fileStem(m.file) === nameOrFile);
  if (byFile.length === 1) return byFile[0];
  const matches = [...new Set([...byName, ...byFile].map((m) => m.file))];
  if (matches.length > 1) {
    throw invalidArgument(`"${nameOrFile}" names ${matches.length} files in MODELS_DIR (${matches.join(', ')}); name the file to deploy`, param);
  }
  return undefined;
}
