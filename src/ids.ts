// Resource ids: a short type prefix and 16 random hex digits (`bld_3f9c...`), so that an id says
// what it names in logs and CLI output.
import crypto from 'node:crypto';

export const newId = (prefix: 'bld' | 'dep' | 'aud' | 'req') => `${prefix}_${crypto.randomBytes(8).toString('hex')}`;
