#!/usr/bin/env bash
# Build the krew archive (the shim) and write the plugin manifest with its sha256.
#   cli/krew/package.sh VERSION URL_OF_THE_ARCHIVE [OUT_DIR]
# The archive must then be published at URL; `kubectl krew install --manifest=OUT_DIR/mongobench.yaml
# --archive=OUT_DIR/kubectl-mongobench.tar.gz` installs it locally without publishing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=${1:?usage: package.sh VERSION URL [OUT_DIR]}
url=${2:?usage: package.sh VERSION URL [OUT_DIR]}
out=${3:-$here/dist}
mkdir -p "$out"
tar -C "$here" --owner=0 --group=0 --mtime='2026-01-01' -czf "$out/kubectl-mongobench.tar.gz" kubectl-mongobench LICENSE.txt
sha=$(sha256sum "$out/kubectl-mongobench.tar.gz" | cut -d' ' -f1)
sed -e "s|@VERSION@|$version|g" -e "s|@URL@|$url|g" -e "s|@SHA256@|$sha|g" \
  "$here/mongobench.yaml.in" > "$out/mongobench.yaml"
echo "$out/mongobench.yaml (sha256 $sha)"
