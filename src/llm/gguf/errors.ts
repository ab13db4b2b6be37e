// The one error of the GGUF layer: every refusal of a file (not GGUF, truncated, corrupt, a limit
// exceeded, a metadata key of the wrong type) is a GgufError whose message is one line naming what
// is wrong and, where it helps, the byte offset. The model library turns it into a load failure.

export class GgufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufError';
  }
}
