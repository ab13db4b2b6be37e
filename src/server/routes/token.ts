// POST /api/v1/authentication/platform-api-key: exchanges an API key for a 24-hour access token.
// Failed attempts are counted per client address; past the limit the endpoint answers 429.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.js';
import type { ApiKeyStore } from '../../auth/api-keys.js';
import type { FailureLimiter } from '../../auth/failure-limiter.js';
import type { TokenIssuer } from '../../auth/tokens.js';
import { responses } from '../schemas.js';

export interface TokenRouteOptions {
  keys: ApiKeyStore;
  tokens: TokenIssuer;
  limiter: FailureLimiter;
}

export const tokenRoutes: FastifyPluginAsync<TokenRouteOptions> = async (app, { keys, tokens, limiter }) => {
  app.post<{ Body: { platformApiKey: string } }>(
    '/api/v1/authentication/platform-api-key',
    {
      schema: {
        summary: 'Exchange an API key for a 24-hour access token (JWT)',
        body: {
          type: 'object',
          required: ['platformApiKey'],
          properties: { platformApiKey: { type: 'string', minLength: 1, maxLength: 512 } },
        },
        response: responses({
          200: {
            type: 'object',
            required: ['accessToken', 'expiredAt'],
            properties: { accessToken: { type: 'string' }, expiredAt: { type: 'integer' } },
          },
        }),
      },
    },
    async (request) => {
      const retryAfter = limiter.retryAfterSeconds(request.ip);
      if (retryAfter > 0) {
        throw new ApiError('rate_limited', `too many failed key exchanges; retry in ${retryAfter} s`, null, {
          'retry-after': String(retryAfter),
        });
      }
      const key = await keys.verify(request.body.platformApiKey);
      if (!key) {
        limiter.recordFailure(request.ip);
        throw new ApiError('unauthenticated', 'invalid or revoked API key', 'platformApiKey', { 'www-authenticate': 'Bearer' });
      }
      request.log.info({ apiKeyId: key.id }, 'access token issued');
      return tokens.issue(key.id);
    },
  );
};
