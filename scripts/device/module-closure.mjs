// Prints the node_modules folders of the named packages and of everything they depend on
// (dependencies, optional and peer dependencies that are installed), relative to the cwd.
// Used by pack.sh to carry only what the GPU machine runs.
import fs from 'node:fs'; import path from 'node:path';
const root = process.cwd(); const seen = new Set();
function resolve(name, from) {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const p = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(p, 'package.json'))) return p;
    if (dir === root || dir === path.dirname(dir)) return null;
  }
}
function visit(p) {
  if (!p || seen.has(p)) return; seen.add(p);
  const pkg = JSON.parse(fs.readFileSync(path.join(p, 'package.json'), 'utf8'));
  for (const d of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies })) visit(resolve(d, p));
}
for (const n of process.argv.slice(2)) visit(resolve(n, root));
for (const p of [...seen].sort()) console.log(path.relative(root, p));
