// The web console (DESIGN.md "Docs and console"): the files that `npm run build` writes to
// console/dist, served at /console/ with @fastify/static. The files need no token (a browser sends
// none); the console signs in with an API key and sends the bearer token on every API call, as
// the CLI does: it has no endpoint of its own. /console redirects to /console/. Without a build,
// /console answers 503 saying how to make one, rather than failing the host's start.
// These are not API operations: the routes are hidden from the OpenAPI document, like the docs
// page's own files.
import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic, { type SetHeadersResponse } from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.js';
import { packageRoot } from '../../native/addon.js';

export const CONSOLE_PREFIX = '/console';

export interface ConsoleRouteOptions {
  /** The built console (default: console/dist in the package). */
  root?: string;
}

// The console loads nothing from elsewhere, and this says so to the browser too. Inline styles
// are allowed because the UI library sets style attributes; no inline script is.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

function setHeaders(res: SetHeadersResponse, file: string): void {
  res.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  // Vite names every asset by its content hash; index.html is looked at on every visit.
  const hashed = file.split(path.sep).includes('assets');
  res.setHeader('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
}

export const consoleRoutes: FastifyPluginAsync<ConsoleRouteOptions> = async (app, opts) => {
  const root = opts.root ?? path.join(packageRoot(), 'console', 'dist');
  const hidden = { schema: { hide: true } };

  if (!existsSync(path.join(root, 'index.html'))) {
    app.log.warn({ root }, 'the web console is not built: /console answers 503 until `npm run build` is run');
    const notBuilt = async () => {
      throw new ApiError(
        'unavailable',
        `the web console is not built: run \`npm run build\` in the package directory (it writes ${path.relative(packageRoot(), root) || root}), then restart the host`,
      );
    };
    app.get(CONSOLE_PREFIX, hidden, notBuilt);
    app.get(`${CONSOLE_PREFIX}/*`, hidden, notBuilt);
    return;
  }

  await app.register(fastifyStatic, {
    root,
    // Given without the slash, so that /console redirects (301) to /console/, which serves index.html.
    prefix: CONSOLE_PREFIX,
    redirect: true,
    index: ['index.html'],
    // The build writes a .gz twin of each text file; a browser that accepts gzip gets it.
    preCompressed: true,
    cacheControl: false,
    setHeaders,
    // The app's own reply decorators stay untouched (the docs page registers this plugin too).
    decorateReply: false,
    dotfiles: 'deny',
    schemaHide: true,
  });
};
