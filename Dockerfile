# syntax=docker/dockerfile:1
# The memfs image (README "Containers"): by default `memfs serve` as the unprivileged
# user memfs (uid 10001) on the data volume /var/lib/memfs, port 8765, with a health
# check on GET /healthz (no credential, no database: the HTTP stack's floor). The same
# image is the privileged mount sidecar of deploy/kubernetes/sidecar-pod.yaml:
# `memfs-container mount …` as root (README "Kubernetes").
#
#   docker build -t memfs .
#   docker run -d --name memfs -p 8765:8765 -v memfs-data:/var/lib/memfs memfs
#   docker exec memfs memfs key create --scope admin        # an API key (shown once)
#   docker run -d -p 8765:8765 -e MEMFS_DATABASE=postgresql://… memfs   # on PostgreSQL
#
# No secret is baked in: keys live in the database, a session token or a PostgreSQL URL
# comes from the environment (a Kubernetes Secret). The base is pinned to a Python and
# Debian release (the project's Python 3.11, Debian 12); pin it by digest too
# (--build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:…) for byte-for-byte
# rebuilds.
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# pyfuse3 with memfs's kernel-cache patch (third_party/pyfuse3/), built as scripts/setup
# builds it, from the same pinned, checksummed sdist.
ARG PYFUSE3_VERSION=3.5.0
ARG PYFUSE3_SHA256=88399a9494b88603230bba300f4ba9ad63fece5ed514ca3633d555a0c6a42b24
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc pkg-config libfuse3-dev patch \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY memfs ./memfs
COPY third_party/pyfuse3 ./third_party/pyfuse3
RUN python -m venv /opt/memfs \
 && /opt/memfs/bin/pip install --no-cache-dir /src \
 && /opt/memfs/bin/pip download -q --no-deps --no-binary pyfuse3 -d /tmp/pyfuse3 \
      "pyfuse3==${PYFUSE3_VERSION}" \
 && echo "${PYFUSE3_SHA256}  /tmp/pyfuse3/pyfuse3-${PYFUSE3_VERSION}.tar.gz" | sha256sum -c - \
 && tar -xzf "/tmp/pyfuse3/pyfuse3-${PYFUSE3_VERSION}.tar.gz" -C /tmp/pyfuse3 \
 && patch -s -p1 -F0 -d "/tmp/pyfuse3/pyfuse3-${PYFUSE3_VERSION}" \
      < "third_party/pyfuse3/pyfuse3-${PYFUSE3_VERSION}-kernel-cache-flags.patch" \
 && rm -f "/tmp/pyfuse3/pyfuse3-${PYFUSE3_VERSION}/src/pyfuse3/__init__.c" \
 && SETUPTOOLS_SCM_PRETEND_VERSION_FOR_PYFUSE3="${PYFUSE3_VERSION}+memfs.kernelcache" \
      /opt/memfs/bin/pip wheel -q --no-deps -w /tmp/pyfuse3/wheel \
      "/tmp/pyfuse3/pyfuse3-${PYFUSE3_VERSION}" \
 && /opt/memfs/bin/pip install --no-cache-dir --no-deps --force-reinstall /tmp/pyfuse3/wheel/pyfuse3-*.whl \
 && /opt/memfs/bin/python -c "import pyfuse3; assert pyfuse3.NOFLUSH_SUPPORTED is not None"

FROM ${PYTHON_IMAGE}
# fuse3: libfuse3 and fusermount3 (the mount sidecar); util-linux: mountpoint(1).
RUN apt-get update \
 && apt-get install -y --no-install-recommends fuse3 util-linux \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/memfs /opt/memfs
COPY deploy/container-entrypoint.sh /usr/local/bin/memfs-container
RUN ln -s /opt/memfs/bin/memfs /usr/local/bin/memfs \
 && ln -s /opt/memfs/bin/mount.fuse.memfs /sbin/mount.fuse.memfs \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/memfs --shell /usr/sbin/nologin memfs \
 && install -d -o memfs -g memfs -m 0700 /var/lib/memfs
ENV MEMFS_HOME=/var/lib/memfs \
    MEMFS_PORT=8765 \
    PYTHONUNBUFFERED=1
VOLUME /var/lib/memfs
USER 10001:10001
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/opt/memfs/bin/python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('MEMFS_PORT', '8765'), timeout=4)"]
ENTRYPOINT ["/usr/local/bin/memfs-container"]
CMD ["serve"]
