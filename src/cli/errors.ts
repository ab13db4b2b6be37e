// CLI failures and their exit codes (DESIGN.md section 2): 1 when the platform refused or could
// not do what was asked, 2 when the command line itself is wrong.

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, 2);
