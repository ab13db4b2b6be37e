# CPU build of the native addons (node-gyp; `npm install` / `npm run build:native`):
#   build/Release/platform.node          the addon that ships (native/addon/)
#   build/Release/platform_testing.node  entry points only tests call (native/testing/)
# Both link one static library of the engine (everything below native/addon/), so it is compiled
# once. The source lists live in native/sources.json, shared with CMakeLists.txt (the CUDA build);
# this build takes "no_cuda" where the CUDA build takes "cuda".
# No -mavx2/-march flags: SIMD kernels are compiled per function (target attributes) and chosen
# at run time, so this one binary runs on any x86-64 or arm64 CPU.
{
  "target_defaults": {
    "include_dirs": [
      "<!(node -p \"require('node-addon-api').include_dir\")"
    ],
    "defines": [
      "NAPI_VERSION=8",
      "NAPI_CPP_EXCEPTIONS",
      "PLATFORM_VERSION=<!(node -p \"require('./package.json').version\")"
    ],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions"],
    "cflags": ["-O3"],
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    "xcode_settings": {
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "CLANG_CXX_LIBRARY": "libc++",
      "MACOSX_DEPLOYMENT_TARGET": "10.15",
      "GCC_OPTIMIZATION_LEVEL": "3"
    },
    "msvs_settings": {
      "VCCLCompilerTool": {
        "ExceptionHandling": 1,
        "AdditionalOptions": ["/std:c++17", "/O2"]
      }
    }
  },
  "targets": [
    {
      "target_name": "platform_engine",
      "type": "static_library",
      "sources": [
        "<!@(node -p \"const s = require('./native/sources.json'); s.engine.concat(s.no_cuda).join(' ')\")"
      ],
      "cflags": ["-fPIC"]
    },
    {
      "target_name": "platform",
      "dependencies": ["platform_engine"],
      "sources": [
        "<!@(node -p \"require('./native/sources.json').addon.join(' ')\")"
      ]
    },
    {
      "target_name": "platform_testing",
      "dependencies": ["platform_engine"],
      "sources": [
        "<!@(node -p \"require('./native/sources.json').testing.join(' ')\")"
      ]
    }
  ]
}
