// JSON Schema -> grammar (src/llm/structured/json-schema.ts): every string the grammar accepts must
// parse and validate (soundness, by sampling 200 generated schemas), hand-written instances per
// construct are accepted or refused as ajv would, unsupported constructs are refused with a
// SchemaError pointing at them, and size and time stay bounded.
import { describe, expect, it } from 'vitest';

import { GrammarBuilder, grammarMatches, type Grammar } from '../src/llm/structured/grammar.js';
import { jsonObjectGrammar, JsonSchemaCompiler, jsonSchemaGrammar, SchemaError } from '../src/llm/structured/json-schema.js';
import { schemaValidator } from './helpers/ajv.js';
import { sampleFromGrammar } from './helpers/grammar-sampler.js';
import { rng } from './helpers/random.js';
import { generateSchemas } from './helpers/schema-generator.js';

const ajv = schemaValidator();

/** Rules that may begin with themselves (the native side refuses left recursion). */
function leftRecursiveRules(g: Grammar): number[] {
  const nullable = g.rules.map(() => false);
  for (let changed = true; changed; ) {
    changed = false;
    g.rules.forEach((alternatives, r) => {
      if (!nullable[r] && alternatives.some((seq) => seq.every((item) => 'rule' in item && nullable[item.rule]))) {
        nullable[r] = true;
        changed = true;
      }
    });
  }
  // first[r]: rules that can stand first in a derivation of r.
  const first = g.rules.map((alternatives) => {
    const out = new Set<number>();
    for (const seq of alternatives) {
      for (const item of seq) {
        if (!('rule' in item)) break;
        out.add(item.rule);
        if (!nullable[item.rule]) break;
      }
    }
    return out;
  });
  return g.rules
    .map((_, r) => r)
    .filter((r) => {
      const seen = new Set<number>();
      const stack = [...first[r]!];
      while (stack.length > 0) {
        const s = stack.pop()!;
        if (s === r) return true;
        if (seen.has(s)) continue;
        seen.add(s);
        stack.push(...first[s]!);
      }
      return false;
    });
}

function schemaError(schema: unknown): SchemaError {
  try {
    jsonSchemaGrammar(schema);
  } catch (err) {
    if (err instanceof SchemaError) return err;
    throw err;
  }
  throw new Error(`no SchemaError for ${JSON.stringify(schema)}`);
}

/** Asserts the grammar accepts each of `valid` and refuses each of `invalid`, and that ajv agrees. */
function expectLanguage(schema: object, valid: string[], invalid: string[]): void {
  const g = jsonSchemaGrammar(schema);
  const validate = ajv.compile(schema);
  for (const text of valid) {
    expect(validate(JSON.parse(text)), `ajv: ${text}`).toBe(true);
    expect(grammarMatches(g, text), `accepts ${text}`).toBe(true);
  }
  for (const text of invalid) expect(grammarMatches(g, text), `refuses ${text}`).toBe(false);
}

describe('JSON Schema grammars are sound', () => {
  it('every sampled string of 200 generated schemas parses and validates', () => {
    const schemas = generateSchemas(20261125, 200);
    const random = rng(19);
    let samples = 0;
    for (const [i, schema] of schemas.entries()) {
      const g = jsonSchemaGrammar(schema);
      expect(leftRecursiveRules(g), `schema ${i}`).toEqual([]);
      const validate = ajv.compile(schema);
      for (let k = 0; k < 20; k++) {
        const text = Buffer.from(sampleFromGrammar(g, random)).toString('utf8');
        let value: unknown;
        expect(() => (value = JSON.parse(text)), `schema ${i}: ${text}`).not.toThrow();
        if (!validate(value)) throw new Error(`schema ${i} ${JSON.stringify(schema)}: ${text}: ${ajv.errorsText(validate.errors)}`);
        samples++;
      }
    }
    expect(samples).toBe(4000);
  });

  it('the generated schemas cover the constructs', () => {
    const text = JSON.stringify(generateSchemas(20261125, 200));
    for (const word of ['"anyOf"', '"oneOf"', '"$ref":"#/$defs/node"', '"prefixItems"', '"pattern"', '"format":"date"', '"format":"uuid"', '"minLength"', '"exclusiveMinimum"', '"enum"', '"const"', '"type":"null"', '"type":"boolean"', '"minProperties"']) {
      expect(text).toContain(word);
    }
  });

  it('the any-object grammar samples parse as objects', () => {
    const g = jsonObjectGrammar();
    const random = rng(5);
    for (let k = 0; k < 200; k++) {
      const value: unknown = JSON.parse(Buffer.from(sampleFromGrammar(g, random, 12)).toString('utf8'));
      expect(value !== null && typeof value === 'object' && !Array.isArray(value)).toBe(true);
    }
    expect(grammarMatches(g, ' {"a": [1, {"b": null}], "c": "\\u00e9"}')).toBe(true);
    expect(grammarMatches(g, '[1]')).toBe(false);
    expect(grammarMatches(g, '{"a":1} ')).toBe(false); // nothing after the value
  });
});

describe('JSON Schema grammars accept and refuse per construct', () => {
  it('strings: escapes, unicode, lengths in code points', () => {
    expectLanguage(
      { type: 'string', maxLength: 3 },
      ['""', '"\\"\\\\\\/"', '"\\b\\f\\n"', '"\\r\\t"', '"\\u00e9\\u00E9"', '"😀😀😀"', '"é"', '"\\u0000"'],
      ['"abcd"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\x41"', '"\\u12"', '"\n"', '"\u0001"', '"a"b"', "'a'"],
    );
    expectLanguage({ type: 'string', minLength: 2, maxLength: 2 }, ['"😀😀"', '"\\u0041b"'], ['"😀"', '"abc"']);
  });

  it('patterns: anchored and unanchored, escaped characters', () => {
    expectLanguage({ type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' }, ['"AB-123"'], ['"AB-12"', '"xAB-123"', '"AB-1234"', '"ab-123"']);
    expectLanguage({ type: 'string', pattern: 'b+c', maxLength: 5 }, ['"bc"', '"abbcx"', '"xxbc"'], ['"b"', '"abbbbc"', '""']);
    expectLanguage({ type: 'string', pattern: '^(?:a|bc)*?$' }, ['""', '"abca"'], ['"b"']);
    expectLanguage({ type: 'string', pattern: '^"\\\\.$' }, ['"\\"\\\\x"'], ['"\\"\\\\\\n"', '"\\u0022\\\\x"']);
    expectLanguage({ type: 'string', pattern: '^[^a-z]$' }, ['"A"', '"\\n"', '"é"'], ['"a"', '"AB"']);
    expectLanguage({ type: 'string', pattern: '^\\w\\s\\S$' }, ['"a b"', '"_\\tx"'], ['"a  "', '"-ab"']);
  });

  it('formats: date with leap years, uuid, date-time, time, ipv4', () => {
    expectLanguage(
      { type: 'string', format: 'date' },
      ['"2024-02-29"', '"2000-02-29"', '"2023-12-31"', '"0000-02-29"', '"2023-04-30"'],
      ['"2023-02-29"', '"1900-02-29"', '"2023-04-31"', '"2023-13-01"', '"2023-00-10"', '"2023-1-01"'],
    );
    expectLanguage({ type: 'string', format: 'uuid' }, ['"123e4567-e89b-12d3-a456-426614174000"', '"123E4567-E89B-12D3-A456-426614174000"'], ['"123e4567e89b12d3a456426614174000"', '"g23e4567-e89b-12d3-a456-426614174000"']);
    expectLanguage({ type: 'string', format: 'date-time' }, ['"2024-02-29T23:59:59Z"', '"2024-01-01t00:00:00.5+05:30"'], ['"2023-02-29T00:00:00Z"', '"2024-01-01T24:00:00Z"', '"2024-01-01T00:00:00"']);
    expectLanguage({ type: 'string', format: 'time' }, ['"12:30:00z"', '"23:59:59.123456789-12:00"'], ['"12:60:00Z"']);
    expectLanguage({ type: 'string', format: 'ipv4' }, ['"0.0.0.0"', '"255.255.255.255"', '"10.1.20.199"'], ['"256.0.0.1"', '"01.2.3.4"', '"1.2.3"']);
  });

  it('integers: ranges, negative and exclusive bounds, at most 15 digits', () => {
    expectLanguage({ type: 'integer', minimum: -120, maximum: -7 }, ['-120', '-7', '-99', '-100'], ['-121', '-6', '0', '7', '-07']);
    expectLanguage({ type: 'integer', exclusiveMinimum: -3, exclusiveMaximum: 250 }, ['-2', '0', '249', '10'], ['-3', '250', '-0', '1.0', '1e2']);
    expectLanguage({ type: 'integer', minimum: 1.5, maximum: 3.5 }, ['2', '3'], ['1', '4']);
    expectLanguage({ type: 'integer' }, ['0', '-999999999999999', '999999999999999'], ['1000000000000000', '00', '+1']);
  });

  it('numbers: integer bounds, fractions only where every value is in range', () => {
    expectLanguage({ type: 'number', minimum: -2, maximum: 3 }, ['-2', '3', '2.999', '-1.5', '-0.25', '0'], ['3.1', '3.0', '-2.5', '4', '1e0']);
    expectLanguage({ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }, ['0.5', '0.001'], ['0', '0.0', '1', '0.000']);
    expectLanguage({ type: 'number', exclusiveMaximum: -4 }, ['-4.5', '-5', '-100.25'], ['-4', '-4.0', '-3.5']);
    // At most 15 significant digits (the integer part's zero counts), so no fraction rounds onto a bound.
    expectLanguage({ type: 'number' }, ['0.12345678901234', '-12345678901234.5'], ['0.123456789012345', '123456789012345.5', '1.']);
  });

  it('enum and const: canonical text, filtered by the other keywords', () => {
    expectLanguage({ enum: ['a', 1, null, { x: [1, 2] }, true] }, ['"a"', '1', 'null', '{"x":[1,2]}', 'true'], ['"b"', '{ "x": [1,2] }', 'false']);
    expectLanguage({ type: 'string', enum: ['a', 1, 'bbb'], maxLength: 2 }, ['"a"'], ['1', '"bbb"']);
    expectLanguage({ const: 'fixed' }, ['"fixed"'], ['"fixe"']);
  });

  it('objects: order, required, optional, whitespace, additionalProperties', () => {
    const closed = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' }, c: { type: 'boolean' } }, required: ['b'], additionalProperties: false };
    expectLanguage(closed, ['{"b":""}', '{"a":1,"b":"x","c":true}', '{ "a" : 1 ,\n  "b" : "x" }', '{"b":"","c":false}'], ['{}', '{"a":1}', '{"b":"x","a":1}', '{"b":"x","d":1}', '{"b":"x",}', '{"b":"x"}      '.repeat(1) + 'x']);
    const open = { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: { type: 'boolean' } };
    expectLanguage(open, ['{"a":1,"b":true}', '{"ab":false,"c":true}', '{"":true}'], ['{"a":true}', '{"b":1}', '{"\\u0061":true}']);
    expectLanguage({ type: 'object' }, ['{}', '{"k":[1,{"z":null}]}'], ['[]']);
    expectLanguage({ type: 'object', properties: { a: { type: 'null' }, b: { type: 'null' }, c: { type: 'null' } }, minProperties: 1, maxProperties: 2, additionalProperties: false }, ['{"a":null}', '{"b":null,"c":null}'], ['{}', '{"a":null,"b":null,"c":null}']);
  });

  it('bounded whitespace', () => {
    expectLanguage({ type: 'array', items: { type: 'integer' } }, [' [1,2]', '[\n\t\t1 ,2]', `[\n${' '.repeat(16)}1]`], [`[\n${' '.repeat(17)}1]`, '[  1]', '[\n\n1]']);
  });

  it('arrays: items, prefixItems, minItems, maxItems, draft-07 tuples', () => {
    expectLanguage({ type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 }, ['[1]', '[1,2,3]'], ['[]', '[1,2,3,4]', '[1,]', '["a"]']);
    expectLanguage({ type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], items: false, minItems: 1 }, ['[1]', '[1,"a"]'], ['[]', '[1,"a",2]', '["a"]']);
    expectLanguage({ type: 'array', prefixItems: [{ type: 'integer' }], items: { type: 'boolean' }, maxItems: 3 }, ['[]', '[1,true,false]'], ['[1,true,false,true]', '[true]']);
  });

  it('anyOf, disjoint oneOf, allOf with one schema, type lists, boolean schemas', () => {
    expectLanguage({ anyOf: [{ type: 'string', maxLength: 1 }, { type: 'integer', minimum: 5 }] }, ['"a"', '5'], ['"ab"', '4', 'null']);
    const tagged = {
      oneOf: [
        { type: 'object', properties: { kind: { const: 'a' }, x: { type: 'integer' } }, required: ['kind'], additionalProperties: false },
        { type: 'object', properties: { kind: { enum: ['b', 'c'] }, y: { type: 'string' } }, required: ['kind'], additionalProperties: false },
      ],
    };
    expectLanguage(tagged, ['{"kind":"a","x":1}', '{"kind":"c","y":""}'], ['{"kind":"a","y":""}', '{"x":1}']);
    expectLanguage({ allOf: [{ type: 'boolean' }], description: 'ignored' }, ['true', 'false'], ['null']);
    expectLanguage({ type: ['string', 'null'], maxLength: 1, nullable: true }, ['null', '"a"'], ['"ab"', '1']);
    expectLanguage({ type: 'object', properties: { a: true, b: false } }, ['{"a":[{}]}', '{}'], ['{"b":1}']);
  });

  it('$ref: definitions, recursion through an optional branch, the root itself', () => {
    const list = {
      $defs: { node: { type: 'object', properties: { v: { type: 'integer' }, next: { $ref: '#/$defs/node' } }, required: ['v'], additionalProperties: false } },
      $ref: '#/$defs/node',
    };
    expectLanguage(list, ['{"v":1}', '{"v":1,"next":{"v":2,"next":{"v":3}}}'], ['{"v":1,"next":{}}', '{"next":{"v":2}}']);
    const tree = { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#' }, maxItems: 2 } }, additionalProperties: false };
    expectLanguage(tree, ['{}', '{"kids":[{},{"kids":[{}]}]}'], ['{"kids":[{},{},{}]}']);
    expectLanguage({ definitions: { n: { type: 'integer', maximum: 3 } }, type: 'array', items: { $ref: '#/definitions/n' } }, ['[3,1]'], ['[4]']);
  });

  it('one compiler serves several sub-schemas of one root', () => {
    const root = { $defs: { id: { type: 'integer', minimum: 1, maximum: 9 } }, type: 'object', properties: { a: { $ref: '#/$defs/id' } } };
    const b = new GrammarBuilder();
    const compiler = new JsonSchemaCompiler(b, root);
    const both = [...compiler.value(root.properties.a, '/properties/a'), ...b.literal(';'), ...compiler.value({ $ref: '#/$defs/id' })];
    const g = b.build(both);
    expect(grammarMatches(g, '3;9')).toBe(true);
    expect(grammarMatches(g, '3;0')).toBe(false);
  });
});

describe('JSON Schema refusals', () => {
  it.each([
    [{ type: 'number', multipleOf: 2 }, '/multipleOf'],
    [{ properties: { when: { type: 'string', format: 'email' } } }, '/properties/when/format'],
    [{ properties: { n: { type: 'number', multipleOf: 3 } } }, '/properties/n/multipleOf'],
    [{ not: { type: 'string' } }, '/not'],
    [{ if: { type: 'string' }, then: { minLength: 1 } }, '/if'],
    [{ type: 'object', patternProperties: { '^a': {} } }, '/patternProperties'],
    [{ type: 'object', propertyNames: { maxLength: 3 } }, '/propertyNames'],
    [{ type: 'object', dependentRequired: { a: ['b'] } }, '/dependentRequired'],
    [{ type: 'object', additionalProperties: true, minProperties: 2 }, '/minProperties'],
    [{ type: 'array', uniqueItems: true }, '/uniqueItems'],
    [{ type: 'array', contains: { type: 'integer' } }, '/contains'],
    [{ oneOf: [{ type: 'string' }, { type: 'string', maxLength: 2 }] }, '/oneOf'],
    [{ oneOf: [{ type: 'integer' }, { type: 'number' }] }, '/oneOf'],
    [{ allOf: [{ type: 'string' }, { maxLength: 2 }] }, '/allOf'],
    [{ $ref: '#/$defs/a', maxLength: 2, $defs: { a: { type: 'string' } } }, '/maxLength'],
    [{ $ref: 'https://example.com/schema' }, '/$ref'],
    [{ $ref: '#/$defs/missing' }, '/$ref'],
    [{ type: 'string', pattern: '(a)\\1' }, '/pattern'],
    [{ type: 'string', pattern: '(?=a)a' }, '/pattern'],
    [{ type: 'string', pattern: '\\bword' }, '/pattern'],
    [{ type: 'string', pattern: '(?i)a' }, '/pattern'],
    [{ type: 'string', pattern: '\\p{L}' }, '/pattern'],
    [{ enum: Array.from({ length: 100_000 }, (_, i) => i) }, '/enum'],
    [{ type: 'number', maximum: 2.5 }, '/maximum'],
    [{ $defs: { a: { $ref: '#/$defs/b' }, b: { anyOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' }, '/$defs/a'],
  ])('%j is refused at %s', (schema, path) => {
    const err = schemaError(schema);
    expect(err.path).toBe(path);
    expect(err.message).toMatch(/not supported|does not resolve|\$ref cycle|invalid regular expression/);
  });

  it('names the construct and where it is', () => {
    expect(schemaError({ properties: { n: { type: 'integer', multipleOf: 2 } } }).message).toBe('multipleOf is not supported (at /properties/n)');
  });

  it('refuses invalid schemas with the ajv message', () => {
    const err = schemaError({ type: 12 });
    expect(err.message).toMatch(/^invalid JSON Schema: .*type/);
    expect(err.path).toBe('/type');
    expect(schemaError({ properties: { a: { minLength: -1 } } }).path).toBe('/properties/a/minLength');
    // Inside $defs and prefixItems too, which the draft-07 meta-schema does not read.
    expect(schemaError({ $defs: { a: { maxLength: 'x' } }, $ref: '#/$defs/a' }).path).toBe('/$defs/a/maxLength');
    expect(schemaError({ type: 'array', prefixItems: [{ type: 'strin' }] }).path).toBe('/prefixItems/0/type');
    expect(schemaError({ type: 'string', pattern: `${'('.repeat(150)}a${')'.repeat(150)}` }).path).toBe('/pattern');
    expect(schemaError('nope').message).toMatch(/object or a boolean/);
  });

  it('refuses schemas that no value satisfies', () => {
    expect(schemaError(false).message).toMatch(/no JSON value/);
    expect(schemaError({ type: 'string', minLength: 3, maxLength: 2 }).message).toMatch(/no JSON value|matches no value/);
    expect(schemaError({ type: 'string', pattern: '^a$', minLength: 2 }).message).toMatch(/no JSON value|matches no value/);
    expect(schemaError({ type: 'object', properties: { a: false }, required: ['a'] }).message).toMatch(/no JSON value|matches no value/);
    // A required recursion has no finite instance.
    expect(schemaError({ type: 'object', properties: { self: { $ref: '#' } }, required: ['self'] }).message).toMatch(/no JSON value/);
  });

  it('hits the size limit quickly, as a SchemaError', () => {
    const huge = [
      { type: 'string', maxLength: 50_000_000 },
      { enum: Array.from({ length: 4000 }, (_, i) => `value-${i}-${'x'.repeat(60)}`) },
      { type: 'object', properties: Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`p${i}`, { type: 'integer' }])) },
      { type: 'string', pattern: '^(a|b)*a(a|b){24}$' },
      { type: 'string', pattern: '^[a-z]{1,50}$', maxLength: 10_000_000 },
    ];
    for (const schema of huge) {
      const started = Date.now();
      const err = schemaError(schema);
      expect(err.message).toMatch(/would exceed/);
      expect(Date.now() - started).toBeLessThan(3000);
    }
  });

  it('stops at the deadline', () => {
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string', pattern: `^x{${i % 50}}y$` }])) };
    const started = Date.now();
    let err: unknown;
    try {
      jsonSchemaGrammar(wide, { deadlineMs: 50, maxItems: 10_000_000 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaError);
    expect((err as Error).message).toMatch(/took more than 50 ms/);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('GrammarBuilder.chars', () => {
  it('matches exactly the code points of random classes, negated ones included (all code points)', () => {
    const random = rng(1125);
    const point = () => {
      const band = random();
      const max = band < 0.4 ? 0x80 : band < 0.6 ? 0x800 : band < 0.8 ? 0x10000 : 0x110000;
      return Math.floor(random() * max);
    };
    for (const negate of [false, true, true]) {
      const ranges = Array.from({ length: 4 }, () => {
        const a = point();
        return [a, Math.min(0x10ffff, a + Math.floor(random() * 300))] as [number, number];
      });
      const b = new GrammarBuilder();
      const g = b.build(b.chars(ranges, negate));
      const inClass = (cp: number) => ranges.some(([lo, hi]) => cp >= lo && cp <= hi) !== negate;
      let wrong = 0;
      for (let cp = 0; cp <= 0x10ffff; cp++) {
        if (cp === 0xd800) cp = 0xe000;
        if (grammarMatches(g, String.fromCodePoint(cp)) !== inClass(cp)) wrong++;
      }
      expect(wrong, JSON.stringify({ ranges, negate })).toBe(0);
      // Never a surrogate, an overlong form or a byte past F4.
      for (const bytes of [[0xed, 0xa0, 0x80], [0xc0, 0x80], [0xe0, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]]) {
        expect(grammarMatches(g, Uint8Array.from(bytes))).toBe(false);
      }
    }
  }, 240_000); // 3.3 million matches: about 20 s alone, over a minute on a loaded CI machine
});
