// Library requests across replicas. Each replica runs its own engine and a library model may run
// on some of them only (`--replicas N`), so a chat or completion request that reaches a replica is
// answered there, or forwarded to a replica that has the model loaded: the one a session
// (X-Session-ID, or the body's `user`) hashes to, so that its prefix cache stays useful, else this
// one when it has the model, else any that has it. A forwarded request is always answered where
// it lands (no second hop). With no replica holding a model that is deployed, the answer is 503
// with Retry-After. The choice reads only the replica list of the last heartbeat, from memory.
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { holdsLibraryModel, type ReplicaRecord } from '../cluster/replicas.js';
import { rendezvous } from '../cluster/placement.js';
import { ApiError } from '../errors.js';

/** Set on a forwarded request: the replica that forwarded it. */
export const FORWARDED_HEADER = 'x-platform-forwarded-by';
/** Names the replica that answered, on every response. */
export const REPLICA_HEADER = 'x-replica-id';
/** Requests carrying the same value stick to one replica. */
export const SESSION_HEADER = 'x-session-id';

export type LibraryRoute = { to: 'here' } | { to: 'replica'; replica: ReplicaRecord } | { to: 'none' };

/** Where a request for `modelId` goes, from the live replicas and whether this one serves it. */
export function routeLibraryRequest(modelId: string, selfId: string, servedHere: boolean, reachable: readonly ReplicaRecord[], session: string | undefined): LibraryRoute {
  const holding = reachable.filter((r) => r.id !== selfId && holdsLibraryModel(r.loaded, modelId));
  // A draining replica still serves until it stops: the holder of last resort.
  const serving = holding.filter((r) => r.state === 'serving');
  const others = serving.length > 0 || servedHere ? serving : holding.filter((r) => r.state === 'draining');
  const holders = [...(servedHere ? [selfId] : []), ...others.map((r) => r.id)];
  if (holders.length === 0) return { to: 'none' };
  let target: string;
  if (session !== undefined && session !== '') target = rendezvous(session, holders)[0]!;
  else if (servedHere) target = selfId;
  else target = holders[Math.floor(Math.random() * holders.length)]!;
  return target === selfId ? { to: 'here' } : { to: 'replica', replica: others.find((r) => r.id === target)! };
}

export interface ForwarderOptions {
  selfId: string;
  /** The replicas with a recent heartbeat (draining ones included), as last read. */
  live: () => readonly ReplicaRecord[];
  /** Whether this replica has the model loaded. */
  servedHere: (modelId: string) => boolean;
  /** Whether the model is a library deployment that some replica should be serving (LIVE). */
  deployedLive: (modelId: string) => Promise<boolean>;
}

export class LibraryForwarder {
  constructor(private readonly options: ForwarderOptions) {}

  /**
   * Answers the request by forwarding it when another replica should; resolves to false when it
   * is to be answered here (served, or refused with this replica's reason: unknown, loading, ...).
   */
  async forwardIfElsewhere(request: FastifyRequest, reply: FastifyReply, modelId: string): Promise<boolean> {
    if (request.headers[FORWARDED_HEADER] !== undefined) return false;
    const o = this.options;
    const session = sessionOf(request);
    const route = routeLibraryRequest(modelId, o.selfId, o.servedHere(modelId), o.live(), session);
    if (route.to === 'here') return false;
    if (route.to === 'none') {
      // Deployed and live somewhere by its record, but on no live replica now (one died, or it moves).
      if (await o.deployedLive(modelId)) throw new ApiError('unavailable', `model "${modelId}" is not loaded on any live replica right now; retry shortly`, null, { 'retry-after': '1' });
      return false;
    }
    try {
      await this.forward(request, reply, route.replica);
    } catch (err) {
      // The holder did not answer (it died since its last heartbeat): once more, elsewhere.
      const again = routeLibraryRequest(modelId, o.selfId, o.servedHere(modelId), o.live().filter((r) => r.id !== route.replica.id), session);
      if (!(err instanceof Unreachable) || again.to === 'none') throw err instanceof Unreachable ? err.answer : err;
      if (again.to === 'here') return false;
      await this.forward(request, reply, again.replica).catch((e: unknown) => {
        throw e instanceof Unreachable ? e.answer : e;
      });
    }
    return true;
  }

  private async forward(request: FastifyRequest, reply: FastifyReply, to: ReplicaRecord): Promise<void> {
    const abort = new AbortController();
    // The caller went away: stop the forwarded generation too.
    const onClose = () => {
      if (!reply.raw.writableFinished) abort.abort();
    };
    reply.raw.once('close', onClose);
    const headers: Record<string, string> = { 'content-type': 'application/json', [FORWARDED_HEADER]: this.options.selfId, 'x-request-id': request.id };
    for (const name of ['authorization', 'accept', SESSION_HEADER]) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    let res: Response;
    try {
      res = await fetch(to.address + request.url, { method: request.method, headers, body: JSON.stringify(request.body), signal: abort.signal });
    } catch (err) {
      reply.raw.off('close', onClose);
      request.log.warn({ replica: to.id, err: (err as Error).message }, 'forwarding a library request failed');
      throw new Unreachable(new ApiError('unavailable', `the replica serving this model (${to.id}) did not answer; retry shortly`, null, { 'retry-after': '1' }));
    }
    reply.code(res.status);
    for (const name of ['content-type', 'cache-control', 'retry-after', REPLICA_HEADER]) {
      const value = res.headers.get(name);
      if (value !== null) reply.header(name, value);
    }
    request.log.debug({ replica: to.id }, 'library request forwarded');
    if (!res.body) return void (await reply.send(''));
    const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
    // A stream cut by the holder (it died mid-answer) ends as our own streams end on a failure:
    // one more event in the error shape, then [DONE]; a JSON answer is simply cut.
    const events = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    await reply.send(events ? Readable.from(endEventsOnFailure(body, to.id, request)) : body);
  }
}

/** A replica that could not be reached, with the answer to give if no other can take the request. */
class Unreachable extends Error {
  constructor(readonly answer: ApiError) {
    super(answer.message);
  }
}

async function* endEventsOnFailure(source: Readable, replicaId: string, request: FastifyRequest): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of source) yield chunk as Buffer;
  } catch (err) {
    request.log.warn({ replica: replicaId, err: (err as Error).message }, 'a forwarded stream was cut');
    const error = new ApiError('unavailable', `the replica serving this model (${replicaId}) stopped in the middle of the answer; retry`);
    yield Buffer.from(`data: ${JSON.stringify(error.body())}\n\ndata: [DONE]\n\n`);
  }
}

/** The session a request names: the X-Session-ID header, else the OpenAI body's `user`. */
function sessionOf(request: FastifyRequest): string | undefined {
  const header = request.headers[SESSION_HEADER];
  if (typeof header === 'string' && header !== '') return header;
  const user = (request.body as { user?: unknown } | undefined)?.user;
  return typeof user === 'string' && user !== '' ? user : undefined;
}
