#!/usr/bin/env node
// `platform`: the command-line client. Exit status 0 on success, 1 when the platform refused or
// failed, 2 on bad usage (DESIGN.md section 2); failures are one line, never a stack trace.
import { Command } from 'commander';
import { registerEngineCommand } from './commands/engine.js';
import { registerAudienceCommands } from './commands/audiences.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerLibraryCommands } from './commands/library.js';
import { registerMetricsCommand } from './commands/metrics.js';
import { registerModelCommands } from './commands/models.js';
import { registerReplicaCommands } from './commands/replicas.js';
import { registerStatusCommand } from './commands/status.js';
import { registerVectorCommands } from './commands/vectors.js';
import { guardProcess, reportFailure } from './failure.js';
import { packageVersion } from './version.js';

export function buildProgram(): Command {
  const program = new Command('platform')
    .description('command-line client of the model-serving platform (PLATFORM_URL, PLATFORM_API_KEY)')
    .version(packageVersion())
    .exitOverride()
    // Commander's own usage errors read like ours: "platform: unknown option '--bogus'".
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'platform: ')) })
    .showHelpAfterError('(add --help for usage)');
  registerKeyCommands(program);
  const models = registerModelCommands(program);
  registerLibraryCommands(program, models);
  registerAudienceCommands(program);
  registerMetricsCommand(program);
  registerStatusCommand(program);
  registerReplicaCommands(program);
  registerEngineCommand(program);
  registerVectorCommands(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    return reportFailure(err);
  }
}

guardProcess();
main(process.argv).then((code) => {
  process.exitCode = code;
});
