# One image for the API (`proofloop serve`) and the workers (`proofloop worker`); see docker-compose.yml.

# --- Python dependencies, in a virtualenv copied whole into the final image
FROM python:3.11-slim AS python-deps
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_PROJECT_ENVIRONMENT=/opt/venv UV_PYTHON_DOWNLOADS=never UV_NO_CACHE=1
# the uv the Makefile pins (UV_VERSION), which installs exactly the versions in uv.lock
RUN pip install uv==0.13.10
WORKDIR /app
# dependencies first, from the lock alone: a code change does not reinstall them; --locked refuses a lock
# that is stale against pyproject.toml
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --no-install-project
COPY . .
# editable: the code runs from /app, where `proofloop worker` starts dramatiq (cwd) and GraphiQL's page lives
RUN uv sync --locked

# --- GraphiQL's browser assets, so the image's GraphiQL page works without a CDN
FROM node:20-slim AS graphiql-assets
WORKDIR /graphiql
COPY graphiql/package.json graphiql/package-lock.json graphiql/vendor.mjs ./
RUN npm ci --no-audit --no-fund --loglevel=error && node vendor.mjs /graphiql-assets

# --- runtime
FROM python:3.11-slim
RUN groupadd --system --gid 10001 proofloop \
    && useradd --system --uid 10001 --gid proofloop --home-dir /app --shell /usr/sbin/nologin proofloop \
    && mkdir -p /data \
    && chown proofloop:proofloop /data
COPY --from=python-deps /opt/venv /opt/venv
COPY --from=python-deps /app /app
COPY --from=graphiql-assets /graphiql-assets /app/web/static/graphiql/vendor
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PROOFLOOP_DATA_DIR=/data \
    PROOFLOOP_HOST=0.0.0.0
WORKDIR /app
USER proofloop
# /data holds media: mount one volume there for every API replica (docker-compose.yml does)
EXPOSE 8000 9191
CMD ["proofloop", "serve"]
