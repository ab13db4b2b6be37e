// The addon's one error contract (native/addon/errors.h, src/native/errors.ts): every error it
// raises carries a `code`; an argument error is a TypeError or RangeError 'invalid_argument'
// naming the function; and a failure found later on a worker thread rejects with an error whose
// stack is the JavaScript stack of the call that started the work, so the caller's own function
// shows in it (and survives the wrappers' typed errors), except a tabular run(), whose stack is
// not recorded because that costs 15 % of a one-row run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { LlmEngineError, loadModel } from '../src/llm/engine/index.js';
import { loadAddon } from '../src/native/addon.js';
import { nativeErrorCode } from '../src/native/errors.js';
import { compileTabularModel } from '../src/tabular/executor/index.js';
import { ModelBuilder } from './helpers/onnx-builder.js';
import { compileBytes } from './helpers/tabular-executor.js';
import { normalized, randomFloats } from './helpers/tabular-data.js';

const addon = loadAddon();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'native-errors-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

// A Gemm whose inner dimensions are only known when it runs.
const gemmOfInputs = () =>
  compileBytes(
    new ModelBuilder({ opsets: { '': 13 } })
      .input('a', 'float', ['M', 'K'])
      .input('b', 'float', ['K2', 'N'])
      .node('Gemm', ['a', 'b'], ['y'], {}, { name: 'gemm' })
      .output('y', 'float', ['M', 'N'])
      .toBytes(),
  );
const misfit = [
  { name: 'a', dims: [2, 3], data: randomFloats(6, 1) },
  { name: 'b', dims: [4, 2], data: randomFloats(8, 2) },
];

describe('codes', () => {
  it('argument errors of every binding are TypeError / RangeError with code invalid_argument', () => {
    const cases: Array<[() => unknown, ErrorConstructor, string]> = [
      [() => addon.gemmF32(1 as never, false, 1, 1, 1, 1, new Float32Array(1), 1, new Float32Array(1), 1, 0, new Float32Array(1), 1), TypeError, 'gemmF32: transA must be a boolean, got number'],
      [() => addon.llmGenerate({} as never, [1]), TypeError, 'llmGenerate: handle must be a model handle from llmLoadModel'],
      [() => addon.tabularCompile(null as never), TypeError, 'tabularCompile: model must be an object, got null'],
      [() => addon.tabularCompile({} as never, { threads: 300 }), RangeError, 'tabularCompile: options.threads must be an integer from 0 (the default) to 256, got 300'],
    ];
    for (const [call, kind, message] of cases) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(kind);
      expect(e.message).toBe(message);
      expect(nativeErrorCode(e)).toBe('invalid_argument');
    }
  });

  it('a model the executor refuses is model_refused; a failing run is run_failed; a disposed model is disposed', async () => {
    const misshapen = new ModelBuilder({ opsets: { '': 13 } })
      .input('x', 'float', ['N', 4])
      .initializer('W', 'float', [3, 5], new Array(15).fill(0.5))
      .node('Gemm', ['x', 'W'], ['y'], { transB: 1 }, { name: 'dense' })
      .output('y', 'float', ['N', 3])
      .toBytes();
    const refused = thrown(() => compileBytes(misshapen));
    expect(refused.message).toMatch(/^node "dense" \(operator "Gemm"\): /);
    expect(nativeErrorCode(refused)).toBe('model_refused');
    const model = gemmOfInputs();
    expect(nativeErrorCode(thrown(() => model.runSync(misfit)))).toBe('run_failed');
    expect(nativeErrorCode(await rejection(model.run(misfit)))).toBe('run_failed');
    model.dispose();
    expect(model.disposed).toBe(true);
    expect(nativeErrorCode(thrown(() => model.runSync(misfit)))).toBe('disposed');
  });

  it('cuda where this build cannot run it is unavailable (or compiles, on a CUDA machine)', () => {
    const bytes = new ModelBuilder({ opsets: { '': 13 } }).input('x', 'float', ['N', 2]).node('Relu', ['x'], ['y']).output('y', 'float', ['N', 2]).toBytes();
    const cuda = addon.engineInfo().cuda;
    if (cuda.built && cuda.devices.length > 0) {
      compileTabularModel(normalized(bytes), { device: 'cuda' }).dispose();
    } else {
      const e = thrown(() => compileTabularModel(normalized(bytes), { device: 'cuda' }));
      expect(nativeErrorCode(e)).toBe('unavailable');
      expect(e.message).toMatch(/^instance type cuda is not available on this host: /);
    }
  });
});

describe("the caller's stack on asynchronous failures", () => {
  it('a failing tabular run() rejects with its code and the node, without a recorded stack (the hot path)', async () => {
    const model = gemmOfInputs();
    async function scoreTheBatch() {
      return model.run(misfit);
    }
    const e = await rejection(scoreTheBatch());
    expect(nativeErrorCode(e)).toBe('run_failed');
    expect(e.message).toBe('node "gemm" (operator "Gemm"): A [2, 3] and B [4, 2] have different inner dimensions (3 and 4)');
    expect(e.stack).not.toContain('scoreTheBatch'); // errors.h: 4-9 us a call, 15 % of a one-row run
  });

  it('a failed llmLoadModel rejects with the caller in its stack, and loadModel keeps it in its typed error', async () => {
    const missing = path.join(dir, 'missing.gguf');
    async function openTheModelFile() {
      return addon.llmLoadModel(missing, {}, () => {});
    }
    const raw = await rejection(openTheModelFile());
    expect(nativeErrorCode(raw)).toBe('load_failed');
    expect(raw.message).toContain('cannot open');
    expect(raw.message).not.toMatch(/^llmLoadModel:/);
    expect(raw.stack).toContain('openTheModelFile');

    async function deployTheModel() {
      return loadModel(missing);
    }
    const typed = await rejection(deployTheModel());
    expect(typed).toBeInstanceOf(LlmEngineError);
    expect((typed as LlmEngineError).code).toBe('load_failed');
    expect(typed.message).toBe(raw.message);
    expect(typed.stack!.split('\n')[0]).toBe(`LlmEngineError: ${raw.message}`);
    expect(typed.stack).toContain('deployTheModel');
  });

  it('a bad load option is refused by the addon itself, as a RangeError naming the option', async () => {
    const e = await rejection(loadModel(path.join(dir, 'missing.gguf'), { maxRunningSequences: 0 }));
    expect(e).toBeInstanceOf(RangeError);
    expect(nativeErrorCode(e)).toBe('invalid_argument');
    expect(e.message).toBe('llmLoadModel: options.maxRunningSequences must be an integer in [1, 4096], got 0');
  });
});
