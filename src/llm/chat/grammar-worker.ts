// The grammar worker thread: builds the grammar of each job it is sent (grammar-job.ts) and sends
// back its encoding (transferred, not copied), or why it cannot be built.
import { parentPort } from 'node:worker_threads';
import { buildGrammar, type GrammarJob, type GrammarJobFailure } from './grammar-job.js';

export interface JobRequest {
  id: number;
  job: GrammarJob;
}
export type JobReply = { id: number; encoded: Int32Array } | { id: number; refused: GrammarJobFailure } | { id: number; crashed: string };

parentPort?.on('message', ({ id, job }: JobRequest) => {
  let reply: JobReply;
  try {
    const encoded = buildGrammar(job);
    parentPort!.postMessage({ id, encoded } satisfies JobReply, [encoded.buffer as ArrayBuffer]);
    return;
  } catch (err) {
    reply = err instanceof Error ? { id, crashed: err.stack ?? err.message } : { id, refused: err as GrammarJobFailure };
  }
  parentPort!.postMessage(reply);
});
