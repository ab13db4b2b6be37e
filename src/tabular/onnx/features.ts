// Feature and output names of a build: how the columns of a predict payload map onto the graph's
// inputs, and what each graph output is called in responses.
//
// The graph's inputs are laid side by side: an input of shape [N] or [N, 1] carries one feature, an
// input of shape [N, F] (or [N, 1, ..., 1, F]) carries F features, its columns in order. So a single
// [N, F] input maps feature i to column i of that input, and one input per feature maps feature i to
// input i. Names come from, in order:
//   1. the featureNames option (the CLI's --feature-names);
//   2. the input names, when every input carries exactly one feature;
//   3. the model's metadata property `feature_names`: a JSON array of strings or a comma-separated
//      list (none of the sklearn-onnx fixtures carries one, so this is our convention);
// and otherwise the build is refused with a message that asks for --feature-names.

import { inField, OnnxModelError } from './errors.js';
import type { Dim, ElementType, OnnxModel, OnnxTensorValueInfo, OnnxValueInfo } from './types.js';

export interface DeriveFeaturesOptions {
  /** One name per feature, in payload column order. */
  featureNames?: readonly string[];
  /** One name per graph output, in the graph's order. */
  outputNames?: readonly string[];
}

export interface FeatureColumn {
  name: string;
  elemType: ElementType;
  /** The graph input that carries the feature. */
  input: string;
  /** That input's index in FeatureSchema.inputs. */
  inputIndex: number;
  /** The column of the input's last dimension; 0 for an input of shape [N] or [N, 1]. */
  column: number;
}

export interface FeatureInput {
  name: string;
  elemType: ElementType;
  /** The declared shape, with its last dimension resolved to `width` where the file leaves it open. */
  shape: Dim[];
  /** 1 for [N] inputs; the last dimension otherwise. */
  rank: number;
  width: number;
  /** The fixed batch size when the first dimension is a number (e.g. 1); null when it is open. */
  batchSize: number | null;
  /** The index of the input's first feature in FeatureSchema.features. */
  firstFeature: number;
}

export interface FeatureOutput {
  /** The name in predict responses. */
  name: string;
  /** The graph output it reads. */
  graphOutput: string;
  info: OnnxValueInfo;
}

export interface FeatureSchema {
  features: FeatureColumn[];
  inputs: FeatureInput[];
  outputs: FeatureOutput[];
  featureNamesFrom: 'option' | 'inputs' | 'metadata';
  outputNamesFrom: 'option' | 'graph';
}

/** The metadata property our convention reads feature names from. */
export const FEATURE_NAMES_METADATA_KEY = 'feature_names';

function formatShape(shape: readonly Dim[] | null): string {
  if (shape === null) return 'unknown';
  return `[${shape.map((d) => (d === null ? '?' : String(d))).join(', ')}]`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

interface InputLayout {
  info: OnnxTensorValueInfo;
  rank: number;
  /** null when the last dimension is symbolic or unknown. */
  width: number | null;
  batchSize: number | null;
}

function layoutOf(info: OnnxTensorValueInfo): InputLayout {
  const shape = info.shape;
  if (shape === null) return { info, rank: 2, width: null, batchSize: null };
  if (shape.length === 0) {
    throw new OnnxModelError(`input "${info.name}" is a scalar; tabular inputs are [N] or [N, F]`);
  }
  const first = shape[0];
  const batchSize = typeof first === 'number' ? first : null;
  if (shape.length === 1) return { info, rank: 1, width: 1, batchSize };
  for (const d of shape.slice(1, -1)) {
    if (d !== 1) {
      throw new OnnxModelError(
        `input "${info.name}" has shape ${formatShape(shape)}; tabular inputs are [N] or [N, F] (dimensions between N and F must be 1)`,
      );
    }
  }
  const last = shape[shape.length - 1];
  return { info, rank: shape.length, width: typeof last === 'number' ? last : null, batchSize };
}

function checkNames(names: readonly string[], what: string, where = ''): void {
  const seen = new Set<string>();
  names.forEach((n, k) => {
    if (typeof n !== 'string' || n.trim() === '') throw new OnnxModelError(`${what} ${k + 1}${where} is empty`);
    if (seen.has(n)) throw new OnnxModelError(`${what} "${n}" is given twice${where}`);
    seen.add(n);
  });
}

function metadataNames(model: OnnxModel): string[] | undefined {
  const raw = model.metadata[FEATURE_NAMES_METADATA_KEY];
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new OnnxModelError(`the model's metadata "${FEATURE_NAMES_METADATA_KEY}" is not a valid JSON array`);
    }
    if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string')) {
      throw new OnnxModelError(`the model's metadata "${FEATURE_NAMES_METADATA_KEY}" is not an array of strings`);
    }
    return parsed as string[];
  }
  return text.split(',').map((n) => n.trim());
}

/**
 * Derives a build's feature columns and output names from a parsed model and the user's names.
 * Throws OnnxModelError with a message that says what to pass when the names are missing or do
 * not fit the model.
 */
export function deriveFeatures(model: OnnxModel, options: DeriveFeaturesOptions = {}): FeatureSchema {
  const infos = model.graph.inputs;
  if (infos.length === 0) throw new OnnxModelError('the model has no inputs to feed features into');
  const layouts = infos.map((info) => {
    if (info.kind !== 'tensor') throw new OnnxModelError(`input "${info.name}" is not a tensor`);
    return layoutOf(info);
  });
  const describe = () =>
    layouts.length === 1
      ? `input "${layouts[0]!.info.name}" of shape ${formatShape(layouts[0]!.info.shape)}`
      : `inputs ${layouts.map((l) => `"${l.info.name}" ${formatShape(l.info.shape)}`).join(', ')}`;
  const open = layouts.filter((l) => l.width === null);
  const knownWidth = layouts.reduce((sum, l) => sum + (l.width ?? 0), 0);

  // Names, and the width of an input whose last dimension the file leaves open.
  let names: readonly string[];
  let from: FeatureSchema['featureNamesFrom'];
  const fitNames = (given: readonly string[], source: string) => {
    if (open.length > 1) {
      throw new OnnxModelError(
        `the model's ${describe()} leave the number of features of more than one input open, so ${source} cannot be matched to them`,
      );
    }
    const onlyOpen = open[0];
    if (onlyOpen) {
      const width = given.length - knownWidth;
      if (width < 1) {
        throw new OnnxModelError(
          `${source} gives ${plural(given.length, 'name')}, too few for the model's ${describe()}`,
        );
      }
      onlyOpen.width = width;
    } else if (given.length !== knownWidth) {
      throw new OnnxModelError(
        `${source} gives ${plural(given.length, 'name')} but the model takes ${plural(knownWidth, 'feature')} (${describe()})`,
      );
    }
  };

  if (options.featureNames !== undefined) {
    const given = options.featureNames;
    inField('feature_names', () => {
      checkNames(given, 'feature name');
      fitNames(given, '--feature-names');
    });
    names = options.featureNames;
    from = 'option';
  } else if (layouts.every((l) => l.width === 1)) {
    names = layouts.map((l) => l.info.name);
    from = 'inputs';
  } else {
    const fromMetadata = metadataNames(model);
    if (fromMetadata !== undefined) {
      checkNames(fromMetadata, 'feature name', ` in the model's metadata "${FEATURE_NAMES_METADATA_KEY}"`);
      fitNames(fromMetadata, `the model's metadata "${FEATURE_NAMES_METADATA_KEY}"`);
      names = fromMetadata;
      from = 'metadata';
    } else if (open.length > 0) {
      const verb = layouts.length === 1 ? 'does not say how many features it takes' : 'do not say how many features they take';
      throw new OnnxModelError(`the model's ${describe()} ${verb}; pass --feature-names with one name per feature`, 'feature_names');
    } else {
      throw new OnnxModelError(
        `the model's ${describe()} ${layouts.length === 1 ? 'does' : 'do'} not name its ${plural(knownWidth, 'feature')}; pass --feature-names with ${knownWidth} comma-separated names`,
        'feature_names',
      );
    }
  }

  const features: FeatureColumn[] = [];
  const inputs: FeatureInput[] = layouts.map((l, inputIndex) => {
    const width = l.width!;
    const firstFeature = features.length;
    for (let column = 0; column < width; column++) {
      features.push({
        name: names[firstFeature + column]!,
        elemType: l.info.elemType,
        input: l.info.name,
        inputIndex,
        column,
      });
    }
    const shape: Dim[] = l.info.shape === null ? [null, width] : [...l.info.shape];
    if (l.rank > 1) shape[shape.length - 1] = width;
    return { name: l.info.name, elemType: l.info.elemType, shape, rank: l.rank, width, batchSize: l.batchSize, firstFeature };
  });

  // Outputs.
  const graphOutputs = model.graph.outputs;
  let outputNames: readonly string[];
  let outputNamesFrom: FeatureSchema['outputNamesFrom'];
  if (options.outputNames !== undefined) {
    const givenOutputs = options.outputNames;
    inField('output_names', () => checkNames(givenOutputs, 'output name'));
    if (options.outputNames.length !== graphOutputs.length) {
      throw new OnnxModelError(
        `--output-names gives ${plural(options.outputNames.length, 'name')} but the model has ${plural(graphOutputs.length, 'output')} (${graphOutputs.map((o) => o.name).join(', ')})`,
        'output_names',
      );
    }
    outputNames = options.outputNames;
    outputNamesFrom = 'option';
  } else {
    outputNames = graphOutputs.map((o) => o.name);
    outputNamesFrom = 'graph';
  }
  const outputs = graphOutputs.map((info, k) => ({ name: outputNames[k]!, graphOutput: info.name, info }));

  return { features, inputs, outputs, featureNamesFrom: from, outputNamesFrom };
}
