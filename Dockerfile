# The host's image (`npm start`, dist/server/main.js) with the CPU build of the native addon, for
# deploy/helm/platform and plain `docker run`:
#
#   docker build -t model-serving-platform:0.1.0 .
#   docker run --rm -p 8080:8080 -v platform-data:/var/lib/platform model-serving-platform:0.1.0
#
# Two stages: the build stage compiles the native addons (node-gyp: python3, make, g++) and the
# TypeScript, then drops the devDependencies; the runtime stage is node's slim image with only
# package.json, the production node_modules, dist/, console/dist/ and build/Release/platform.node, run as the
# non-root user `platform` (uid/gid 10001). /bin/sleep is there for the chart's preStop hook.
# The CUDA build (build-cuda/, `npm run build:cuda`) needs the CUDA toolkit, which these images do
# not have: a GPU image builds it on an nvidia/cuda devel image and copies build-cuda/ beside build/.

ARG NODE_VERSION=20

FROM node:${NODE_VERSION}-bookworm AS build
# node-gyp's toolchain (the full bookworm image has it; installing it again is harmless).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
# The project's npm: package.json's allowScripts (which dependency install scripts run, and that
# onnxruntime-node's CUDA download does not) is read by npm 11; node 20's bundled npm 10 ignores it.
ARG NPM_VERSION=11.19.1
RUN npm install -g "npm@${NPM_VERSION}" && npm --version
# node-gyp compiles against the headers that come with node in the image (/usr/local/include/node)
# instead of downloading them.
ENV npm_config_nodedir=/usr/local
WORKDIR /app
# Everything `npm ci` needs: its install script builds the addon (binding.gyp, native/) and its
# prepare script compiles the TypeScript (tsconfig.json, src/), links the CLI (scripts/) and builds
# the web console (console/ into console/dist).
# .dockerignore lets in only these.
COPY package.json package-lock.json binding.gyp tsconfig.json ./
COPY native ./native
COPY scripts/link-cli.mjs ./scripts/link-cli.mjs
COPY src ./src
COPY console ./console
RUN npm ci \
    && npm run build \
    && npm prune --omit=dev \
    && test -f build/Release/platform.node \
    && test -f dist/server/main.js \
    && test -f console/dist/index.html

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/var/lib/platform \
    MODELS_DIR=/models \
    PATH=/app/node_modules/.bin:$PATH
# A fixed uid/gid, so that Kubernetes' runAsNonRoot can check it and fsGroup can match it.
RUN groupadd --system --gid 10001 platform \
    && useradd --system --uid 10001 --gid platform --home-dir /var/lib/platform --shell /usr/sbin/nologin platform \
    && mkdir -p /var/lib/platform /models \
    && chown platform:platform /var/lib/platform /models
WORKDIR /app
# Owned by root and read-only to the host: it writes only to DATA_DIR (and /tmp).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
COPY --from=build /app/build/Release/platform.node ./build/Release/platform.node
USER 10001:10001
VOLUME ["/var/lib/platform"]
EXPOSE 8080
# The host drains on SIGTERM (DRAIN_DELAY_SECONDS, SHUTDOWN_TIMEOUT_SECONDS) and exits 0; node runs
# as PID 1 and handles the signal itself.
STOPSIGNAL SIGTERM
CMD ["node", "dist/server/main.js"]
