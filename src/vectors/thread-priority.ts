// Bulk work in the vector store's worker threads (parsing batches, building graphs) runs at a
// lower CPU priority than the main thread, so that when the cores are busy the event loop (health
// checks, fetches, every other route) is scheduled first. The index worker drops its priority
// only while it has graph work queued: a search that finds it idle must not wait for a niced
// thread to be scheduled. Linux only, best effort: a thread's nice value is set through its task
// id, which /proc/thread-self names.
import fs from 'node:fs';
import os from 'node:os';

function threadId(): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

function setNice(tid: number | undefined, nice: number): boolean {
  if (tid === undefined) return false;
  try {
    os.setPriority(tid, Math.max(0, Math.min(19, nice)));
    return true;
  } catch {
    return false; // raising priority back may be refused (RLIMIT_NICE): stay where we are
  }
}

/** Lowers the calling thread's priority for good (the ingest worker). */
export function lowerThreadPriority(nice: number): void {
  if (nice > 0) setNice(threadId(), nice);
}

/**
 * Whether this process may raise a thread's priority back to nice 0 once lowered: root, or an
 * RLIMIT_NICE of at least 20 ("Max nice priority" in /proc/self/limits).
 */
function mayRestore(): boolean {
  if (process.getuid?.() === 0) return true;
  try {
    const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max nice priority'));
    const soft = line?.slice('Max nice priority'.length).trim().split(/\s+/)[0];
    return soft === 'unlimited' || Number(soft) >= 20;
  } catch {
    return false;
  }
}

/**
 * Switches the calling thread between its normal priority and `nice` (the index worker). Where
 * the priority could not be raised back, the thread is left at its normal priority throughout.
 */
export function bulkPriority(nice: number): (bulk: boolean) => void {
  const tid = nice > 0 && mayRestore() ? threadId() : undefined;
  let current = false;
  return (bulk) => {
    if (bulk === current || tid === undefined) return;
    if (setNice(tid, bulk ? nice : 0)) current = bulk;
  };
}
