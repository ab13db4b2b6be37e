// npm prints no warning of ours on every command. The onnxruntime-node CUDA download (which its
// postinstall would try on linux/x64) is denied through package.json's allowScripts instead of an
// `onnxruntime-node-install` line in .npmrc, which npm 11 warns about as an unknown config on
// every command; and every other dependency's install script is reviewed, so npm lists none as
// pending.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/paths.js';

const run = promisify(execFile);
// npm as a user starts it: without the npm_config_* variables of the npm that runs this suite,
// and without the machine's own user config (~/.npmrc), which is not ours.
const env: Record<string, string> = { npm_config_userconfig: '/dev/null' };
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.toLowerCase().startsWith('npm_')) env[k] = v;

describe('npm in this project', () => {
  it('prints no warning about the project configuration', async () => {
    const { stderr } = await run('npm', ['pkg', 'get', 'name'], { cwd: ROOT, env });
    expect(stderr).not.toMatch(/npm warn/i);
  });

  it('has every dependency install script reviewed, and onnxruntime-node denied', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
    expect(pkg.allowScripts?.['onnxruntime-node']).toBe(false);
    const { stdout, stderr } = await run('npm', ['approve-scripts', '--allow-scripts-pending'], { cwd: ROOT, env });
    expect(stderr).not.toMatch(/npm warn/i);
    expect(stdout).not.toMatch(/not yet covered/);
  });

  it('left onnxruntime-node without the CUDA provider its install script would download', () => {
    const bin = path.join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/x64');
    if (!fs.existsSync(bin)) return; // another platform: nothing to download there
    expect(fs.readdirSync(bin).filter((f) => f.includes('providers_cuda'))).toEqual([]);
  });
});
