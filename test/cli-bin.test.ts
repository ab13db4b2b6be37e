// How a user runs `platform` after `npm ci`: `npx platform` or `platform` with node_modules/.bin
// on PATH, both straight to the compiled CLI. package.json declares no "bin" on purpose: npx
// treats a project's own bin as a package to install into its cache, and rebuilt the whole
// project (native addon included) before answering; scripts/link-cli.mjs links it instead.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/paths.js';

const run = promisify(execFile);
const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('the platform command', () => {
  it('node_modules/.bin/platform is the compiled CLI, executable, with a node shebang', () => {
    const link = path.join(ROOT, 'node_modules/.bin/platform');
    expect(fs.realpathSync(link)).toBe(path.join(ROOT, 'dist/cli/main.js'));
    expect(fs.statSync(link).mode & 0o111).not.toBe(0);
    expect(fs.readFileSync(link, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('package.json declares no bin, so npx runs the local link instead of installing the project', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.bin).toBeUndefined();
  });

  it('npx platform and a bare platform on PATH answer from the clone', async () => {
    const env = { ...process.env, PATH: `${path.join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`, npm_config_yes: 'false' };
    const viaNpx = await run('npx', ['--no-install', 'platform', '--version'], { cwd: ROOT, env });
    expect(viaNpx.stdout.trim()).toBe(version);
    const bare = await run('platform', ['--version'], { cwd: ROOT, env });
    expect(bare.stdout.trim()).toBe(version);
  });
});
