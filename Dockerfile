# One image for every pulsar-py service:
#   pulsar broker | bookie | proxy | operator | standalone | function-instance | functions-worker
# plus `pulsar-admin`, `pulsar-client`, `pulsar-perf` (the `operator`, `cli` and
# `functions` extras; no Spark: `pulsar sql` jobs use their own Spark image, see
# docs/spark.md), and etcd for the etcd pods the operator runs. The example
# Python functions are under /pulsar/examples/python-examples, as in Apache's image.
#
#   docker build -t pulsar-py:0.1.0 .
#   docker run --rm -p 6650:6650 -p 8080:8080 pulsar-py:0.1.0 standalone
#
# Services read their config from /pulsar/conf (a ConfigMap in Kubernetes) and
# keep their data under /pulsar/data (a PersistentVolumeClaim).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# etcd comes from the etcd project's own release image (gcr.io/etcd-development/etcd,
# the static binaries of https://github.com/etcd-io/etcd/releases), on the
# supported 3.6 line. Debian bookworm's etcd-server package is 3.4, which is
# end of life. The test suite runs against Debian's etcd-server on the host.
ARG ETCD_IMAGE=gcr.io/etcd-development/etcd
ARG ETCD_VERSION=v3.6.16

FROM ${ETCD_IMAGE}:${ETCD_VERSION} AS etcd

# Build stage: the project and every dependency as wheels, so the runtime
# stage installs offline and carries no build tools.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY services ./services
COPY operator ./operator
COPY spark ./spark
RUN pip wheel --wheel-dir /wheels '.[operator,cli,functions]'

# Runtime stage.
FROM ${PYTHON_IMAGE}
ARG PULSAR_UID=10000
LABEL org.opencontainers.image.title="pulsar-py" \
      org.opencontainers.image.description="Apache Pulsar rebuilt in Python: broker, bookie, proxy, functions, operator" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The etcd pods run `etcd` (found on PATH in /usr/local/bin) from this image.
COPY --from=etcd /usr/local/bin/etcd /usr/local/bin/etcd

COPY --from=build /wheels /wheels
RUN pip install --no-index --find-links=/wheels 'pulsar-py[operator,cli,functions]' \
 && rm -rf /wheels \
 && pulsar --help >/dev/null \
 && python -c 'import pulsar' \
 && etcd --version

# Function resources may name code the image has: Apache's example path (what
# function-mesh samples use) links to the module shipped in the package.
RUN mkdir -p /pulsar/examples/python-examples \
 && ln -s "$(python -c 'import pulsar_functions.examples.exclamation_function as m; print(m.__file__)')" \
          /pulsar/examples/python-examples/exclamation_function.py

# Non-root user; the charts' and the operator's pod security contexts use the same id.
RUN groupadd --system --gid ${PULSAR_UID} pulsar \
 && useradd --system --uid ${PULSAR_UID} --gid pulsar --home-dir /pulsar --shell /usr/sbin/nologin pulsar \
 && mkdir -p /pulsar/conf /pulsar/data /var/lib/etcd \
 && chown -R pulsar:pulsar /pulsar /var/lib/etcd

USER ${PULSAR_UID}:${PULSAR_UID}
WORKDIR /pulsar

# 6650 binary protocol, 8080 HTTP (broker, proxy; the operator's /healthz),
# 3181 bookie, 8000 bookie HTTP, 2379/2380 etcd client/peer.
EXPOSE 6650 8080 3181 8000 2379 2380

ENTRYPOINT ["pulsar"]
CMD ["--help"]
