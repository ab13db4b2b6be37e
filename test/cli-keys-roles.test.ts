// `platform keys create --role --project --collections --tenants` and `keys list` with roles and
// scopes, through the real binary on DATA_DIR (issue 22); bad values are usage errors that name
// the flag, and nothing is created for them.
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/paths.js';

const KEY_LINE = /^psk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/;

describe('keys with roles and scopes', () => {
  it('creates scoped keys, lists their role and scope, and keeps admin as the default', async () => {
    const env = { DATA_DIR: tempDir() };
    const plain = await runCli(['keys', 'create', '--name', 'ops'], env);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(KEY_LINE);
    expect(plain.stderr).toContain('role admin)');

    const scoped = await runCli(['keys', 'create', '--name', 'acme-app', '--role', 'inference', '--collections', 'docs, faq', '--tenants', 'acme'], env);
    expect(scoped.code, scoped.stderr).toBe(0);
    expect(scoped.stdout).toMatch(KEY_LINE);
    expect(scoped.stderr).toContain('role inference, collections=docs,faq tenants=acme');
    const member = await runCli(['keys', 'create', '--name', 'shop-dev', '--role', 'member', '--project', 'shop'], env);
    expect(member.code, member.stderr).toBe(0);

    const list = await runCli(['keys', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+SCOPE\s+CREATED\s+LAST USED\s+STATUS\n/);
    expect(list.stdout).toMatch(/ops\s+admin\s+-\s/);
    expect(list.stdout).toMatch(/acme-app\s+inference\s+collections=docs,faq tenants=acme\s/);
    expect(list.stdout).toMatch(/shop-dev\s+member\s+project=shop\s/);
    const json = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Array<{ name: string; role: string; scope: unknown }>;
    expect(json.map((k) => [k.name, k.role, k.scope])).toEqual([
      ['ops', 'admin', { project: null, collections: null, tenants: null }],
      ['acme-app', 'inference', { project: null, collections: ['docs', 'faq'], tenants: ['acme'] }],
      ['shop-dev', 'member', { project: 'shop', collections: null, tenants: null }],
    ]);
  });

  it('refuses bad roles and scopes with a message naming the flag, and creates nothing', async () => {
    const env = { DATA_DIR: tempDir() };
    const cases: Array<[string[], string]> = [
      [['--role', 'owner'], '--role must be one of admin, maintainer, member, inference; got "owner"'],
      [['--project', 'Shop'], '--project "Shop" is not a project name'],
      [['--collections', 'a,,b'], '--collections has an empty name'],
      [['--collections', '-bad'], '--collections: "-bad" is not a collection name'],
      [['--tenants', ''], '--tenants has an empty name'],
      [['--tenants', 'x'.repeat(257)], '--tenants: a tenant id has 1 to 256 characters'],
    ];
    for (const [flags, message] of cases) {
      const res = await runCli(['keys', 'create', ...flags], env);
      expect(res.code, flags.join(' ')).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(message);
    }
    expect(JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)).toEqual([]);
  });
});
