# One image for the three roles of the Data Access Service (see README, "Container image"):
#   data plane        the default: node dist/dataplane/src/main.js
#   function gateway  the same command with DAS_MODE=function-gateway (the operator renders it so)
#   operator          command override: node dist/operator/src/main.js (the Helm chart sets it)
#
#   docker build -t ghcr.io/data-access-service/data-access:0.1.0 .

# Node 24 LTS (in support); the project also runs on Node 22 or later (package.json engines).
# Without Docker: scripts/image/build.sh builds this file with podman on a locally assembled base.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- dependencies: every npm package, installed once (a layer cached while package*.json stay) ----
FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# --- build: compile the TypeScript to dist/ ------------------------------------------------------
FROM dependencies AS build
COPY tsconfig.json tsconfig.build.json ./
COPY model ./model
COPY dataplane/src ./dataplane/src
COPY operator/src ./operator/src
RUN npm run build

# --- production dependencies: the same install without the development packages (no second
# download or install: npm prune only removes) -----------------------------------------------------
FROM dependencies AS production-dependencies
RUN npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies and the compiled JavaScript only ---------------------------
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The example manifests: `docker run` without a cluster serves them, as `npm start` does.
COPY examples ./examples
# A numeric non-root user, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
# DATA_DIR (the embedded PostgreSQL, the development signing key) must be writable by it.
RUN groupadd --system --gid 10001 das \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin das \
 && mkdir -p /var/lib/data-access \
 && chown 10001:10001 /var/lib/data-access
ENV DATA_DIR=/var/lib/data-access
# npm start listens on loopback only; a container must listen on its pod's address.
ENV HOST=0.0.0.0
USER 10001:10001
EXPOSE 8080
# Exec form: no shell in between, so SIGTERM reaches node, and environment variables whose names
# a shell cannot hold (e.g. with '-') reach the process unchanged.
ENTRYPOINT ["node", "dist/dataplane/src/main.js"]
