// platform engine: what the native engine on this machine offers (SIMD level, threads, CUDA),
// loaded locally, so that a broken build is found before the host is started.
import type { Command } from 'commander';
import { AddonLoadError, loadAddon } from '../../native/addon.js';
import { formatEngine } from '../engine-table.js';
import { CliError } from '../errors.js';

export function registerEngineCommand(program: Command): void {
  program
    .command('engine')
    .description('show the local native engine: SIMD level, threads, CUDA devices')
    .option('--json', 'print JSON (engineInfo() of the addon)')
    .action((opts: { json?: boolean }) => {
      let addon;
      try {
        addon = loadAddon();
      } catch (err) {
        if (err instanceof AddonLoadError) throw new CliError(err.message);
        throw err;
      }
      const info = addon.engineInfo();
      process.stdout.write(opts.json ? JSON.stringify(info, null, 2) + '\n' : formatEngine(info));
    });
}
