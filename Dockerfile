# driftgate: one image for every process (web, controller, all-in-one).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY controller ./controller
COPY web ./web
COPY cli ./cli
COPY demo ./demo
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DRIFTGATE_DATA_DIR=/data \
    DRIFTGATE_HOST=0.0.0.0 \
    DRIFTGATE_PORT=8080
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin driftgate \
    && mkdir -p /data && chown driftgate /data
USER driftgate
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('DRIFTGATE_PORT', '8080'), timeout=4)"
CMD ["driftgate", "up"]
