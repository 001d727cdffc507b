#!/usr/bin/env bash
# The three images (operator, YCSB client, Locust client), tagged from one version: the chart's
# appVersion, which is also the tag the chart and the operator's defaults run.
#   hack/images.sh build      build them with Docker, or Podman when Docker does not run
#   hack/images.sh kind-load  load them into a kind cluster (KIND_CLUSTER, default mongobench)
#   hack/images.sh digests    print the registry's current digests of the pinned base images
#   hack/images.sh list       print the image references
# REGISTRY (default IMAGE_REGISTRY of hack/project.env) and VERSION (default the chart's
# appVersion) override. The OCI labels' revision and source are this checkout's commit and
# PROJECT_URL, as the release workflow passes them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=hack/project.env
source "$here/project.env"
chart_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$repo/charts/mongobench/Chart.yaml")
VERSION=${VERSION:-$chart_version}
REGISTRY=${REGISTRY:-$IMAGE_REGISTRY}
REVISION=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
KIND_CLUSTER=${KIND_CLUSTER:-mongobench}

# name dockerfile [extras] (the build context is the repository root for all; the
# operator-history image is the operator with the extra history: Otava, numpy, scipy)
IMAGES=(
  "operator Dockerfile"
  "operator-history Dockerfile --extra history"
  "ycsb bench-jobs/Dockerfile.ycsb"
  "locust bench-jobs/Dockerfile.locust"
)

engine() {
  local e
  for e in docker podman; do
    if command -v "$e" >/dev/null && "$e" info >/dev/null 2>&1; then
      echo "$e"
      return 0
    fi
  done
  echo "images: neither Docker nor Podman is running here (\`docker info\` and \`podman info\` fail)" >&2
  return 1
}

ref() { echo "$REGISTRY/$1:$VERSION"; }

build() {
  local e entry name file extras
  e=$(engine)
  for entry in "${IMAGES[@]}"; do
    read -r name file extras <<<"$entry"
    echo "images: $e build $(ref "$name")" >&2
    "$e" build --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
      --build-arg "SOURCE=$PROJECT_URL" --build-arg "EXTRAS=$extras" \
      --build-arg "TITLE=mongobench-$name" -f "$repo/$file" -t "$(ref "$name")" "$repo"
  done
}

kind_load() {
  command -v kind >/dev/null || { echo "images: kind is not installed" >&2; return 1; }
  local e entry name file extras archive
  e=$(engine)
  for entry in "${IMAGES[@]}"; do
    read -r name file extras <<<"$entry"
    if [ "$e" = docker ]; then
      kind load docker-image --name "$KIND_CLUSTER" "$(ref "$name")"
    else  # kind cannot read Podman's store: go through an archive
      archive=$(mktemp --suffix=.tar)
      podman save -o "$archive" "$(ref "$name")"
      kind load image-archive --name "$KIND_CLUSTER" "$archive"
      rm -f "$archive"
    fi
  done
}

# Base images as pinned in the Dockerfiles, with the digest of their tag's multi-arch index in
# the registry now (Docker's buildx; with Podman: skopeo inspect --raw | sha256sum).
digests() {
  local from tag
  grep -h '^FROM ' "$repo/Dockerfile" "$repo"/bench-jobs/Dockerfile.* | awk '{print $2}' | sort -u |
    while read -r from; do
      tag=${from%@*}
      echo "$from"
      echo "  now: $tag@$(docker buildx imagetools inspect "$tag" --format '{{json .Manifest.Digest}}' | tr -d '"')"
    done
}

case "${1:-}" in
  build) build ;;
  kind-load) kind_load ;;
  digests) digests ;;
  list) for entry in "${IMAGES[@]}"; do read -r name _ <<<"$entry"; ref "$name"; done ;;
  *) echo "usage: $0 build|kind-load|digests|list" >&2; exit 2 ;;
esac
