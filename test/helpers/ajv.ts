// The validator the structured-output tests check answers with: Ajv for draft 2020-12 with the
// formats of ajv-formats (date, uuid, ...), so a check is as strict as a client's would be.
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

export function schemaValidator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: its plugin is the module's `default` export under ESM.
  formats.default(ajv);
  return ajv;
}
