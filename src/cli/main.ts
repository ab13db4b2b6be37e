#!/usr/bin/env node
// `platform`: the command-line client. Exit status 0 on success, 1 when the platform refused or
// failed, 2 on bad usage (DESIGN.md section 2).
import { Command, CommanderError } from 'commander';
import { registerEngineCommand } from './commands/engine.js';
import { registerAudienceCommands } from './commands/audiences.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerLibraryCommands } from './commands/library.js';
import { registerMetricsCommand } from './commands/metrics.js';
import { registerModelCommands } from './commands/models.js';
import { registerStatusCommand } from './commands/status.js';
import { registerVectorCommands } from './commands/vectors.js';
import { CliError } from './errors.js';

export function buildProgram(): Command {
  const program = new Command('platform')
    .description('command-line client of the model-serving platform (PLATFORM_URL, PLATFORM_API_KEY)')
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)');
  registerKeyCommands(program);
  const models = registerModelCommands(program);
  registerLibraryCommands(program, models);
  registerAudienceCommands(program);
  registerMetricsCommand(program);
  registerStatusCommand(program);
  registerEngineCommand(program);
  registerVectorCommands(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed help or the usage error already.
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
    }
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`error: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}

main(process.argv).then((code) => {
  process.exitCode = code;
});
