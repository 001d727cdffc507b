# mongobench operator image: the `mongobench` package (kopf operator), the results library
# (result documents, merge, summaries, comparison) and the archive package it uploads with,
# installed from the repository's lock file. No CLI, plotting, numpy/scipy or `kubernetes`
# package: operator/tests/unit/test_image_dependencies.py reads the lock to keep it so.
# Build from the repository root:  make images   (or: docker build -t mongobench/operator:dev .)
#
# Base images are pinned by the digest of their multi-arch index (linux/amd64 and linux/arm64);
# `hack/images.sh digests` prints the registry's current ones to refresh them. No apt: nothing
# here breaks when Debian updates a package.
FROM python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5 AS build
WORKDIR /src
COPY hack/image ./hack/image
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes -r hack/image/uv-requirements.txt
COPY pyproject.toml uv.lock ./
COPY operator ./operator
COPY results ./results
COPY archive ./archive
# One install script for all images (hack/image/install-python.sh). EXTRAS="--extra history"
# builds the operator-history image: Otava, numpy and scipy for a BenchmarkExperiment's
# spec.history (condition Regressed); the default image stays without them.
ARG EXTRAS=""
RUN sh hack/image/install-python.sh /opt/mongobench "--package mongobench ${EXTRAS}" ./results ./archive ./operator

FROM python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5
# OCI labels (GHCR links a package to its repository by .source); the release workflow and
# hack/images.sh pass VERSION, REVISION (the commit) and SOURCE (hack/project.env's PROJECT_URL).
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=https://github.com/mongobench/mongobench
# TITLE and DESCRIPTION: the operator-history variant (EXTRAS above) names itself.
ARG TITLE=mongobench-operator
ARG DESCRIPTION="Kubernetes operator for MongoDB performance experiments"
LABEL org.opencontainers.image.title="${TITLE}" \
      org.opencontainers.image.description="${DESCRIPTION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/mongobench /opt/mongobench
# The operator records its build in every run's provenance (benchmarkrun/facts.py).
ENV MONGOBENCH_REVISION=${REVISION} \
    PATH=/opt/mongobench/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The chart runs it with readOnlyRootFilesystem and the restricted Pod Security profile.
USER 10001:10001
EXPOSE 8000 8080
ENTRYPOINT ["mongobench-operator"]
CMD ["run"]
