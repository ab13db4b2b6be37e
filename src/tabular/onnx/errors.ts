// Errors of the ONNX model layer. Every refusal of an uploaded model is an OnnxModelError whose
// message is one sentence naming what is wrong; the server turns it into a 400 and the CLI prints
// it. UnsupportedOperatorError is the subclass for valid ONNX that the engine cannot run (an
// operator, an operator version, an attribute value or an input form it lacks).

export class OnnxModelError extends Error {
  constructor(
    message: string,
    /** The request field the fault is in when it is not the file itself (the names given for it). */
    readonly param?: 'feature_names' | 'output_names',
  ) {
    super(message);
    this.name = 'OnnxModelError';
  }
}

/** Runs `check`, naming `param` as the field at fault in what it throws. */
export function inField<T>(param: 'feature_names' | 'output_names', check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof OnnxModelError && err.param === undefined) throw new OnnxModelError(err.message, param);
    throw err;
  }
}

export interface UnsupportedOperatorDetails {
  /** Qualified operator name: `Gemm` for the default domain, `ai.onnx.ml.SVMClassifier` otherwise. */
  operator: string;
  /** The node's name (synthesised as `<op_type>_<index>` when the file leaves it empty). */
  node: string;
  /** The node's domain as normalised by the parser: '' for ai.onnx. */
  domain: string;
  /** The opset version of that domain that the model imports. */
  opset: number;
  /** The attribute that is not supported, when the refusal is about one. */
  attribute?: string;
}

export class UnsupportedOperatorError extends OnnxModelError {
  readonly details: UnsupportedOperatorDetails;

  constructor(message: string, details: UnsupportedOperatorDetails) {
    super(message);
    this.name = 'UnsupportedOperatorError';
    this.details = details;
  }
}
