# mongobench operator image: the `mongobench` package (kopf operator) and the runner package it
# shares the result merge with, installed from the repository's lock file.
# Build from the repository root:  docker build -t mongobench/operator:dev .
FROM python:3.11.11-slim-bookworm AS build
RUN pip install --no-cache-dir uv==0.13.8
WORKDIR /src
COPY pyproject.toml uv.lock ./
COPY operator ./operator
COPY bench-jobs/runner ./bench-jobs/runner
# Third-party dependencies exactly as locked (hashes checked), then the two workspace packages.
RUN uv export --frozen --no-dev --no-emit-workspace --package mongobench -o requirements.txt \
 && python -m venv /opt/mongobench \
 && /opt/mongobench/bin/pip install --no-cache-dir --require-hashes -r requirements.txt \
 && /opt/mongobench/bin/pip install --no-cache-dir --no-deps ./bench-jobs/runner ./operator

FROM python:3.11.11-slim-bookworm
COPY --from=build /opt/mongobench /opt/mongobench
ENV PATH=/opt/mongobench/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The chart runs it with readOnlyRootFilesystem and the restricted Pod Security profile.
USER 10001:10001
EXPOSE 8000 8080
ENTRYPOINT ["mongobench"]
CMD ["run"]
