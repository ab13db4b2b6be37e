// Reads a YAML (or JSON) file for the CLI; a syntax error names the file, line and column.
import fs from 'node:fs';
import { parseDocument } from 'yaml';
import { CliError } from './errors.js';

export function readYamlFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const doc = parseDocument(text);
  const error = doc.errors[0];
  if (error) {
    const pos = error.linePos?.[0];
    const where = pos ? `line ${pos.line}, column ${pos.col}` : 'unknown position';
    throw new CliError(`${file}: YAML syntax error at ${where}: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`);
  }
  return doc.toJS();
}
