// How the CLI ends when something goes wrong: never with a stack trace. A reader that stops
// reading (`platform keys list | head -1`) ends the command quietly with status 0, as `ls | head`
// does; any failure is one line, `platform: <message>`, and status 1 (2 for bad usage). With
// PLATFORM_DEBUG=1 unexpected errors also print their stack, for bug reports.
import { CommanderError } from 'commander';
import { CliError } from './errors.js';

const debug = () => process.env.PLATFORM_DEBUG === '1';

/** Prints `err` as one line (or its stack under PLATFORM_DEBUG=1) and returns the exit status. */
export function reportFailure(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander has printed the help, the version or the usage error already, and its exitCode
    // says which: 0 for help asked for (--help, `platform help [command]`) and --version; anything
    // else (a usage error, the help shown for a missing subcommand) is bad usage.
    return err.exitCode === 0 ? 0 : 2;
  }
  const code = err instanceof CliError ? err.exitCode : 1;
  // Set first: if stderr is a closed pipe, the exit below still carries it.
  process.exitCode = code;
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`platform: ${message.trim().replace(/\s*\n\s*/g, '; ') || (err as Error)?.name || 'unknown error'}\n`);
  if (debug() && !(err instanceof CliError) && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return code;
}

function isClosedPipe(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}

/**
 * Installs the process-wide guards: a closed stdout or stderr ends the process quietly, and an
 * error that escapes every handler (a stream's, a timer's) is reported like any other failure.
 */
export function guardProcess(): void {
  process.stdout.on('error', (err) => {
    if (isClosedPipe(err)) process.exit(0);
    process.exit(reportFailure(err));
  });
  process.stderr.on('error', (err) => {
    // Nowhere left to report to: keep the status the command had reached.
    const code = typeof process.exitCode === 'number' ? process.exitCode : 0;
    process.exit(isClosedPipe(err) ? code : 1);
  });
  const fatal = (err: unknown) => process.exit(reportFailure(err));
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}
