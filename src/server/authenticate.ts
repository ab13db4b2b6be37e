// The bearer-token hook. Registered on the authenticated part of the app (every route but the
// health checks and the token exchange), it admits a request only with a valid, unexpired token
// whose API key has not been revoked since the token was issued, and gives the request that key's
// role and scope (src/server/access.ts decides with them).
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../errors.js';
import { looksLikeApiKey, type ApiKeyStore } from '../auth/api-keys.js';
import { TokenVerificationError, type TokenIssuer } from '../auth/tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Id of the API key the caller's token was issued for. */
    apiKeyId: string | null;
  }
}

const unauthenticated = (message: string, invalidToken: boolean) =>
  new ApiError('unauthenticated', message, null, {
    'www-authenticate': invalidToken ? 'Bearer error="invalid_token"' : 'Bearer',
  });

export function bearerAuth(tokens: TokenIssuer, keys: ApiKeyStore): onRequestHookHandler {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw unauthenticated('missing Authorization header; send "Authorization: Bearer <token>"', false);
    }
    // A platform API key where the token belongs is a common first mistake: say what to do with
    // it. Judged by its prefix only, so the answer does not tell whether the key exists.
    const credential = /^Bearer +(\S+) *$/i.exec(header)?.[1];
    if (credential !== undefined && looksLikeApiKey(credential)) {
      throw unauthenticated(
        'this is a platform API key, not an access token; exchange it for a token at POST /api/v1/authentication/platform-api-key ' +
          '(body {"platformApiKey": "<key>"}) and send "Authorization: Bearer <accessToken>"',
        true,
      );
    }
    const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
    if (!match) throw unauthenticated('malformed Authorization header; expected "Bearer <token>"', true);
    let keyId: string;
    try {
      keyId = await tokens.verify(match[1]!);
    } catch (err) {
      if (err instanceof TokenVerificationError && err.reason === 'expired') {
        throw unauthenticated('access token expired; exchange your API key for a new one', true);
      }
      if (err instanceof TokenVerificationError && err.reason === 'lifetime') throw unauthenticated(`${err.message}; exchange your API key for a new one`, true);
      throw unauthenticated('access token is invalid', true);
    }
    const found = await keys.lookup(keyId);
    if (found.state !== 'active') {
      throw unauthenticated(found.state === 'revoked' ? 'the API key behind this token was revoked' : 'the API key behind this token does not exist', true);
    }
    request.apiKeyId = keyId;
    // What the key may do, from memory like the revocation: src/server/access.ts checks it.
    request.grant = found.grant;
  };
}
