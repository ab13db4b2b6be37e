// Access tokens: HS256 JWTs that live 24 hours, signed with jose. The subject is the API key id,
// so that revoking the key can be checked on every request.
import crypto from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

export const TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;
const ISSUER = 'model-serving-platform';

export interface IssuedToken {
  accessToken: string;
  /** Unix seconds. */
  expiredAt: number;
}

/** How far in the future a token's `iat` may be (clocks of replicas sharing a secret differ a little). */
export const TOKEN_CLOCK_SKEW_SECONDS = 300;

export type TokenFailure = 'expired' | 'invalid' | 'lifetime';

const FAILURE_MESSAGE: Record<TokenFailure, string> = {
  expired: 'access token expired',
  invalid: 'access token is invalid',
  lifetime: `access token lives longer than the maximum of ${TOKEN_LIFETIME_SECONDS} seconds (its exp is more than 24 hours after its iat, or its iat is in the future)`,
};

export class TokenVerificationError extends Error {
  constructor(readonly reason: TokenFailure) {
    super(FAILURE_MESSAGE[reason]);
  }
}

// Verified tokens, so that a client sending the same token on every request pays for the HMAC
// and the JSON parsing once. A signature cannot change, so the cache only has to keep the expiry.
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenIssuer {
  private readonly verified = new Map<string, { keyId: string; exp: number }>();

  constructor(
    private readonly secret: Uint8Array,
    private readonly clock: () => number = Date.now,
  ) {}

  async issue(keyId: string): Promise<IssuedToken> {
    const now = Math.floor(this.clock() / 1000);
    const expiredAt = now + TOKEN_LIFETIME_SECONDS;
    const accessToken = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(keyId)
      .setIssuedAt(now)
      .setExpirationTime(expiredAt)
      .setJti(crypto.randomUUID())
      .sign(this.secret);
    return { accessToken, expiredAt };
  }

  /** Returns the key id the token was issued for. */
  async verify(token: string): Promise<string> {
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.exp * 1000 <= this.clock()) throw new TokenVerificationError('expired');
      return cached.keyId;
    }
    const keyId = await this.verifySignature(token);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp as number;
    this.verified.set(token, { keyId, exp });
    return keyId;
  }

  private async verifySignature(token: string): Promise<string> {
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: new Date(this.clock()),
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      if (typeof payload.sub !== 'string') throw new TokenVerificationError('invalid');
      // However validly signed, no token outlives the lifetime this host gives its own.
      const { iat, exp } = payload as { iat: number; exp: number };
      if (exp - iat > TOKEN_LIFETIME_SECONDS || iat > this.clock() / 1000 + TOKEN_CLOCK_SKEW_SECONDS) throw new TokenVerificationError('lifetime');
      return payload.sub;
    } catch (err) {
      if (err instanceof TokenVerificationError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw new TokenVerificationError('expired');
      throw new TokenVerificationError('invalid');
    }
  }
}
