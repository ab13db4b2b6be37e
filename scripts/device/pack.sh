#!/usr/bin/env bash
# Packs what the GPU machine lacks into .device/ (in .gitignore; pass it in the device tool's
# `carry` together with `dist`): the Node.js binary (xz), the production node_modules plus tsx
# (to run the benchmarks) and vitest (the GPU tests), the four N-API headers the addon compiles against, and the
# stories260K fixture. The GPU machine can reach nothing outside itself, so this is the only way
# Node gets there; the C++ tools (native/tools) need none of it.
#   scripts/device/pack.sh            then carry: [".device", "dist"]
# (console/dist is not carried: the GPU checks need no web console, and /console answers 503 there.)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=.device
mkdir -p "$OUT/node-include"

npm run build --silent                       # dist/ (tsc)

if [[ ! -f $OUT/node.xz ]]; then
  echo "compressing $(command -v node) ($(node -v))"
  xz -T0 -6 -c "$(command -v node)" > "$OUT/node.xz.tmp" && mv "$OUT/node.xz.tmp" "$OUT/node.xz"
fi

NODE_INCLUDE=$(node -p "require('path').join(process.execPath, '..', '..', 'include', 'node')")
for h in node_api.h node_api_types.h js_native_api.h js_native_api_types.h; do cp "$NODE_INCLUDE/$h" "$OUT/node-include/"; done

# Production dependencies (as installed here, native builds included) plus tsx (the bench
# runner) and vitest (the GPU tests), with everything they depend on.
node scripts/device/module-closure.mjs $(node -p "Object.keys(require('./package.json').dependencies).join(' ')") tsx vitest \
  > "$OUT/modules.txt"
tar -cf - -T "$OUT/modules.txt" | xz -T0 -6 > "$OUT/node_modules.tar.xz"

FIXTURE=../shared/fixtures/stories260K.gguf
[[ -f $FIXTURE ]] && cp "$FIXTURE" "$OUT/"
du -sh "$OUT" dist
echo 'carry: [".device", "dist"]'
