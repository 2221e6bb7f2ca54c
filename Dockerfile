# driftgate: one image for every process (web, controller, all-in-one, the migration job).
#
# The base is python:3.11-slim pinned by digest, so that a build is the same build tomorrow:
# its linux/amd64 image as docker-library/repo-info recorded the tag on 2026-08-05 (the
# multi-platform index, for other machines, was
# sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff).
# BASE_IMAGE overrides it with any image that has python3 (3.11 or newer) and its venv module:
# another digest, a mirror's copy, or one built from Debian's packages
# (deploy/image/build-base.sh). Dependencies are installed from requirements.lock, every file
# checked against its hash; driftgate itself from this checkout, into a virtual environment at
# /opt/driftgate that is on PATH.
#
#   podman build -t driftgate .                    (or docker build)
#   podman build --build-arg BASE_IMAGE=localhost/driftgate-base:bookworm-... -t driftgate .
#
# Behind a proxy that re-signs TLS, give pip the CA bundle as a build secret (it is not kept in
# the image): --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt. A package index
# other than PyPI: --build-arg PIP_INDEX_URL=https://mirror.example/simple.
ARG BASE_IMAGE=docker.io/library/python:3.11-slim@sha256:78b39ef14d8e2b4d71f8dc304f1328c37df95fe0ef99477c2ae6bd3d03784553

# The dependencies alone (a stage of their own: a build that changes only driftgate's code
# starts from it).
FROM ${BASE_IMAGE} AS deps
ARG PIP_INDEX_URL
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/driftgate
COPY requirements.lock /src/requirements.lock
RUN --mount=type=secret,id=ca-bundle \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    /opt/driftgate/bin/pip install --require-hashes --no-deps -r /src/requirements.lock

# driftgate's wheel, built from this checkout.
FROM deps AS build
ARG PIP_INDEX_URL
COPY pyproject.toml README.md /src/
COPY controller /src/controller
COPY web /src/web
COPY cli /src/cli
COPY demo /src/demo
RUN --mount=type=secret,id=ca-bundle \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    /opt/driftgate/bin/pip wheel --no-deps --wheel-dir /wheels /src

# The image: the dependencies' stage (its layers shared with every build of the same lock),
# driftgate's wheel installed on it.
FROM deps
ENV PATH=/opt/driftgate/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DRIFTGATE_DATA_DIR=/data \
    DRIFTGATE_HOST=0.0.0.0 \
    DRIFTGATE_PORT=8080
COPY --from=build /wheels /wheels
RUN /opt/driftgate/bin/pip install --no-deps --no-index /wheels/*.whl \
    && /opt/driftgate/bin/pip check \
    && rm -rf /wheels /src \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /data --shell /usr/sbin/nologin driftgate \
    && mkdir -p /data && chown 10001:10001 /data
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('DRIFTGATE_PORT', '8080'), timeout=4)"]
CMD ["driftgate", "up"]
