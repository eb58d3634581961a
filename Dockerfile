# syntax=docker/dockerfile:1
#
# Wheelhouse server image.
#   docker build -t wheelhouse .
#   docker run -p 3000:3000 -e WHEELHOUSE_API_KEYS=$(openssl rand -hex 32) -v wheelhouse-data:/data wheelhouse
#
# The image listens on all interfaces (HOST=0.0.0.0), so it refuses to start without API keys
# (or WHEELHOUSE_AUTH=none, an open API on purpose).
#
# Node 26 is the Active LTS line since October 2026 (24 is in maintenance). The base image is
# pinned to an exact release, so a rebuild gets the Node that CI tested: `.ci/run` runs the suite
# on this NODE_VERSION too. Override with --build-arg NODE_VERSION=24.x.y if you must.
# better-sqlite3 ships prebuilt binaries for both; the build tools below compile it from source
# when a prebuilt one is missing.
ARG NODE_VERSION=26.12.1
ARG DEBIAN_RELEASE=trixie

FROM node:${NODE_VERSION}-${DEBIAN_RELEASE}-slim AS base
WORKDIR /app

# Native-module toolchain, only in the stages that install packages.
FROM base AS toolchain
RUN apt-get update \
	&& apt-get install -y --no-install-recommends python3 make g++ \
	&& rm -rf /var/lib/apt/lists/*

# 1. Build: all dependencies, then TypeScript → dist/, and the playground page → dist/playground.
FROM toolchain AS build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build-playground.ts ./scripts/
COPY src ./src
# The server needs neither source maps (node runs without --enable-source-maps) nor declarations.
RUN npm run build && find dist \( -name '*.map' -o -name '*.d.ts' \) -delete

# 2. Production dependencies only.
FROM toolchain AS prod-deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# 3. Runtime: no compiler, no dev dependencies, non-root; tini as PID 1 reaps the processes MCP
# stdio servers leave behind (node, as PID 1, would leave them as zombies) and passes signals on.
FROM base AS runtime
RUN apt-get update \
	&& apt-get install -y --no-install-recommends tini \
	&& rm -rf /var/lib/apt/lists/*
ARG PORT=3000
ENV NODE_ENV=production \
	HOST=0.0.0.0 \
	PORT=${PORT} \
	WHEELHOUSE_STORE=sqlite \
	WHEELHOUSE_DB=/data/wheelhouse.db
# App files stay root-owned (read-only for the server); only /data is writable by it.
COPY --from=prod-deps /app/node_modules ./node_modules
# dist/ holds the server and the playground page (dist/playground), served at / by default.
COPY --from=build /app/dist ./dist
# The OpenAPI document is built from the routes at runtime (GET /openapi.json): openapi.yaml is not needed.
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
# Sessions, transcripts and the event log live here: mount a volume to keep them across restarts.
VOLUME ["/data"]
EXPOSE ${PORT}
# main.ts stops accepting, lets runs finish within WHEELHOUSE_SHUTDOWN_GRACE_MS, aborts the rest, exits 0.
STOPSIGNAL SIGTERM
# Healthy = ready: /readyz is 503 while the store (or, in a cluster, Redis) is unreachable and
# while the server stops. No curl in slim images: Node's own fetch.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
	CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
