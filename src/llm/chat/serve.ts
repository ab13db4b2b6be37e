// One OpenAI completion request served on a library model, below the HTTP route: take the live
// instance, start the generation of each choice, count the request in the metrics, and give the
// answer either whole (one JSON object) or as the chunk objects of a stream, in the form of its
// endpoint (forms.ts). How chunks reach the client (SSE) is the route's business.
//
// n > 1: the first choice starts at once; the others start when its prompt has been processed,
// so they find the prompt's full blocks in the prefix cache and compute only its last, partial
// block. Choice i samples with seed + i, so a seeded answer is reproducible choice by choice.
import crypto from 'node:crypto';
import type { LlmInstance } from '../library/instance.js';
import type { LibraryService } from '../library/service.js';
import type { LlmMetrics } from '../metrics.js';
import { Completion, type CompletionResult } from './completion.js';
import type { Choice, ChoiceForm, CompletionForm } from './forms.js';
import type { SamplingParams } from './params.js';
import type { OutputConstraint } from './constraint.js';
import { LlmEngineError } from '../engine/index.js';

export { ChatForm, TextForm, type CompletionForm, type ToolsRequest } from './forms.js';

/** The usage of an answer: the prompt counted once, the completions of every choice. */
function usageJson(results: readonly CompletionResult[]) {
  const first = results[0]!;
  const completion = results.reduce((sum, r) => sum + r.completionTokens, 0);
  return {
    prompt_tokens: first.promptTokens,
    completion_tokens: completion,
    total_tokens: first.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: first.cachedTokens },
  };
}

/** What the metrics count for a request of several choices: its tokens, its first token's time, its first choice's pace. */
function requestResult(results: readonly CompletionResult[]): CompletionResult {
  const ttfts = results.map((r) => r.ttftMs).filter((t): t is number => t !== null);
  return { ...results[0]!, completionTokens: results.reduce((sum, r) => sum + r.completionTokens, 0), ttftMs: ttfts.length > 0 ? Math.min(...ttfts) : null };
}

/** A generation under way, answered once: whole() or chunks(). */
export class Answer {
  private readonly base: { id: string; created: number; model: string };
  private readonly renderers: ChoiceForm[];
  private cancelled = false;

  constructor(
    private readonly modelId: string,
    private readonly form: CompletionForm,
    private readonly params: SamplingParams,
    /** Choice i's completion (the first at once, the others once its prompt is done). */
    private readonly completions: ReadonlyArray<Promise<Completion>>,
    private readonly metrics: LlmMetrics,
  ) {
    this.base = { id: `${form.idPrefix}${crypto.randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000), model: modelId };
    this.renderers = completions.map((_, i) => form.choice(i));
    for (const c of completions) c.catch(() => {}); // reported through whole() / chunks()
  }

  /** The whole answer, once every choice has finished (a choice that fails cancels the others). */
  async whole(): Promise<Record<string, unknown>> {
    const done = await Promise.all(
      this.completions.map(async (pending) => {
        const completion = await pending;
        let text = '';
        const it = completion.text();
        let step = await it.next();
        while (!step.done) {
          text += step.value;
          step = await it.next();
        }
        return { text, result: step.value, completion };
      }),
    ).catch((err: unknown) => {
      this.cancel();
      throw err;
    });
    const results = done.map((d) => d.result);
    this.metrics.requestFinished(this.modelId, requestResult(results));
    const choices = done.map((d, i) => {
      const choice = this.renderers[i]!.whole(d.text, d.result.finishReason);
      if (this.params.logprobs !== null) choice.logprobs = this.renderers[i]!.logprobs(d.completion.takeLogprobs());
      return choice;
    });
    return { ...this.base, object: this.form.object, choices, usage: usageJson(results) };
  }

  /**
   * The chunks of a stream: each choice's opening one at once, one per text delta of any choice
   * as it comes, each choice's closing one with its finish reason, and the usage when asked for.
   * Returning the generator early stops and cancels every choice.
   */
  async *chunks(): AsyncGenerator<Record<string, unknown>> {
    const usage = this.params.includeUsage ? { usage: null } : {};
    const chunk = (choice: Choice) => ({ ...this.base, object: this.form.chunkObject, choices: [choice], ...usage });
    for (const r of this.renderers) yield chunk(r.opening());
    const queue: Choice[] = [];
    const results: CompletionResult[] = [];
    let running = this.completions.length;
    let failure: unknown = null;
    let wake: (() => void) | null = null;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const pump = async (i: number) => {
      try {
        const completion = await this.completions[i]!;
        const it = completion.text();
        try {
          for (let step = await it.next(); ; step = await it.next()) {
            if (this.cancelled) break;
            if (step.done) {
              results[i] = step.value;
              queue.push(...this.withLogprobs(completion, i, this.renderers[i]!.closing(step.value.finishReason)));
              break;
            }
            queue.push(...this.withLogprobs(completion, i, this.renderers[i]!.deltas(step.value)));
            notify();
          }
        } finally {
          await it.return(undefined as never);
        }
      } catch (err) {
        failure ??= err;
      } finally {
        running--;
        notify();
      }
    };
    const pumps = this.completions.map((_, i) => pump(i));
    try {
      while (running > 0 || queue.length > 0) {
        if (failure !== null) throw failure;
        const next = queue.shift();
        if (next) yield chunk(next);
        else await new Promise<void>((resolve) => (wake = resolve));
      }
      if (failure !== null) throw failure;
      if (this.cancelled) return; // the client left: nothing finished to count
      this.metrics.requestFinished(this.modelId, requestResult(results));
      if (this.params.includeUsage) yield { ...this.base, object: this.form.chunkObject, choices: [], usage: usageJson(results) };
    } finally {
      // Leaving early (the client went away) cancels every choice, started or still to start.
      this.cancel();
      await Promise.all(pumps);
    }
  }

  /** The choice's tokens' log-probabilities since its last chunk go on the first of these chunks (when asked for). */
  private withLogprobs(completion: Completion, i: number, choices: Choice[]): Choice[] {
    if (this.params.logprobs === null || choices.length === 0) return choices;
    const entries = completion.takeLogprobs();
    if (entries.length > 0) choices[0] = { ...choices[0], logprobs: this.renderers[i]!.logprobs(entries) };
    return choices;
  }

  get isCancelled(): boolean {
    return this.cancelled;
  }

  cancel(): void {
    this.cancelled = true;
    for (const c of this.completions) void c.then((completion) => completion.cancel(), () => {});
  }
}

/** Choice i's seed: the request's plus i, so that each choice has its own random stream. */
const seedOf = (params: SamplingParams, i: number): SamplingParams =>
  params.seed === undefined || i === 0 ? params : { ...params, seed: (params.seed + i) % Number.MAX_SAFE_INTEGER };

/**
 * Starts the completion of each choice on the live instance of `modelId`. The request's grammar
 * is built off the event loop first; then, with no await between, the instance is checked to be
 * still the live one (else everything is prepared again on the new one) and the first generation
 * starts, so an instance switch never unloads a model under a request that has not reached the
 * engine yet.
 */
export async function startAnswer(library: LibraryService, metrics: LlmMetrics, modelId: string, form: CompletionForm, params: SamplingParams): Promise<Answer> {
  const arrived = performance.now();
  metrics.requestArrived(modelId);
  let instance: LlmInstance;
  let prompt: number[];
  let constraint: OutputConstraint | undefined;
  do {
    instance = library.instance(modelId);
    prompt = form.prompt(instance);
    constraint = await form.constraint(instance);
  } while (library.instance(modelId) !== instance);
  const start = (i: number) => new Completion(instance, prompt, seedOf(params, i), arrived, form.startOfText, form.promptField, constraint);
  const first = start(0);
  const completions: Array<Promise<Completion>> = [Promise.resolve(first)];
  let answer: Answer | null = null;
  // A sibling never starts for an answer that was cancelled or whose first choice failed.
  const sibling = (i: number) => async () => {
    if (answer?.isCancelled) throw new LlmEngineError('engine', 'the answer was cancelled');
    return start(i);
  };
  for (let i = 1; i < params.n; i++) completions.push(first.started.then(sibling(i)));
  answer = new Answer(modelId, form, params, completions, metrics);
  return answer;
}
