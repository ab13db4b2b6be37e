// Small ONNX models for realtime tests, written with the onnx-builder.
import { ModelBuilder } from './onnx-builder.js';
import { rng } from './random.js';

/** y = x . w + bias over `features` float inputs, one output named `y`: a distinct answer per build. */
export function linearModel(features: readonly string[], bias: number, seed = 1): Uint8Array {
  const r = rng(seed);
  const w = features.map(() => r() - 0.5);
  return new ModelBuilder({ opsets: { '': 13 } })
    .input('x', 'float', ['N', features.length])
    .initializer('W', 'float', [features.length, 1], w)
    .initializer('B', 'float', [1], [bias])
    .node('Gemm', ['x', 'W', 'B'], ['y'], {}, { name: 'linear' })
    .output('y', 'float', ['N', 1])
    .toBytes();
}

/**
 * A deliberately heavy model: `layers` Gemms of [width, width] after a projection from the
 * features. About layers * width^2 multiply-adds per row: for a shadow that takes a while.
 */
export function heavyModel(features: readonly string[], width = 1024, layers = 300): Uint8Array {
  const r = rng(99);
  const builder = new ModelBuilder({ opsets: { '': 13 } })
    .input('x', 'float', ['N', features.length])
    .initializer('P', 'float', [features.length, width], Array.from({ length: features.length * width }, () => r() * 0.1))
    .initializer('W', 'float', [width, width], Array.from({ length: width * width }, () => (r() - 0.5) * (2 / width)))
    .node('MatMul', ['x', 'P'], ['h0'], {}, { name: 'project' });
  for (let i = 0; i < layers; i++) builder.node('MatMul', [`h${i}`, 'W'], [`h${i + 1}`], {}, { name: `layer${i}` });
  return builder
    .node('Identity', [`h${layers}`], ['y'], {}, { name: 'out' })
    .output('y', 'float', ['N', width])
    .toBytes();
}
