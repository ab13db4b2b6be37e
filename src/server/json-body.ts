// The JSON body parser of every route: Fastify's own (its errors, its __proto__ and constructor
// poisoning refusals), after a scan that refuses a body nested more than MAX_JSON_DEPTH levels deep
// (a 400 naming the limit) before anything parses or walks it.
import type { FastifyBodyParser, FastifyInstance } from 'fastify';
import { invalidArgument } from '../errors.js';
import { jsonDepthMessage, jsonTooDeep } from '../validation.js';

export function boundedJsonParser(app: FastifyInstance): FastifyBodyParser<string> {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (request, body, done) => {
    if (jsonTooDeep(body)) {
      done(invalidArgument(jsonDepthMessage('request body')), undefined);
      return;
    }
    parse(request, body, done);
  };
}

/** Replaces the app's `application/json` parser with the bounded one (routes inherit it). */
export function installJsonParser(app: FastifyInstance): void {
  const parser = boundedJsonParser(app);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
}
