// platform engine: what the native engine on this machine offers (SIMD level, threads, CUDA),
// loaded locally, so that a broken build is found before the host is started.
import type { Command } from 'commander';
import { AddonLoadError, loadAddon } from '../../native/addon.js';
import { CliError } from '../errors.js';

export function registerEngineCommand(program: Command): void {
  program
    .command('engine')
    .description('show the local native engine: SIMD level, threads, CUDA devices')
    .action(() => {
      let addon;
      try {
        addon = loadAddon();
      } catch (err) {
        if (err instanceof AddonLoadError) throw new CliError(err.message);
        throw err;
      }
      process.stdout.write(JSON.stringify(addon.engineInfo(), null, 2) + '\n');
    });
}
