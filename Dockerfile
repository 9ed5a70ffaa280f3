# One image for the API (`proofloop serve`) and the workers (`proofloop worker`); see docker-compose.yml.

# --- Python dependencies, in a virtualenv copied whole into the final image
FROM python:3.11-slim AS python-deps
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
# dependencies first, from pyproject.toml alone: a code change does not reinstall them
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
COPY . .
# editable: the code runs from /app, where `proofloop worker` starts dramatiq (cwd) and GraphiQL's page lives
RUN pip install --no-deps -e .

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
