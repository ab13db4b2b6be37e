#!/usr/bin/env bash
# On the GPU machine: Node from .device/ when the machine has none, node_modules from
# .device/node_modules.tar.xz when absent, and the CUDA addon built with plain CMake (cmake-js
# would download Node's headers; .device/node-include holds the ones N-API needs) into
# build-cuda/Release/platform.node, where the addon loader looks first.
#   source scripts/device/setup.sh
set -eo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if ! command -v node >/dev/null 2>&1; then
  mkdir -p /tmp/node/bin
  [[ -x /tmp/node/bin/node ]] || { xz -dc .device/node.xz > /tmp/node/bin/node && chmod +x /tmp/node/bin/node; }
  export PATH=/tmp/node/bin:$PATH
fi
echo "node $(node -v)"
[[ -d node_modules/fastify ]] || tar -xJf .device/node_modules.tar.xz
if [[ ! -f build-cuda/Release/platform.node ]]; then
  cmake -S . -B /tmp/build-cuda-addon -DCMAKE_BUILD_TYPE=Release -DPLATFORM_CUDA=ON \
    -DCMAKE_JS_INC="$PWD/.device/node-include" -DCMAKE_JS_SRC= -DCMAKE_JS_LIB= >/tmp/cmake-addon.log 2>&1 ||
    { tail -30 /tmp/cmake-addon.log; exit 1; }
  cmake --build /tmp/build-cuda-addon -j16 --target platform >>/tmp/cmake-addon.log 2>&1 ||
    { grep -E 'error' -A3 /tmp/cmake-addon.log | head -60; exit 1; }
  mkdir -p build-cuda/Release && cp /tmp/build-cuda-addon/platform.node build-cuda/Release/platform.node
fi
node -e "const i = require('./build-cuda/Release/platform.node').engineInfo(); console.log(JSON.stringify(i.cuda))"
