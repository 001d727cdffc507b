#!/usr/bin/env bash
# The CLI's release artifacts (make cli-dist, make cli-krew; the release workflow runs the same).
#   cli/release.sh wheels [OUT]                  wheels and sdists of mongobench-results,
#                                                mongobench-archive and mongobench-cli (uv build)
#   cli/release.sh archive VERSION [OUT]         this host's self-contained kubectl-mongobench
#                                                (PyInstaller) in its krew archive; needs the wheels
#   cli/release.sh manifest VERSION URL [OUT]    the krew manifest for every archive in OUT, each
#                                                published under URL/<archive name>
#   cli/release.sh assets VERSION URL [OUT]      what the GitHub Release gets: the manifest, then
#                                                OUT/checksums.txt (sha256 of archives, wheels,
#                                                sdists and the manifest; `sha256sum -c` reads it)
#   cli/release.sh missing VERSION [OUT]         the platforms with no archive in OUT (one line,
#                                                empty when all five are there)
# OUT defaults to dist/cli. Third-party packages come from uv.lock (hashes checked); with
# UV_OFFLINE=1 from the uv cache only (the tests do that: `make setup` fills it).
# The executable is cached by a hash of what goes into it (the wheels, uv.lock, the entry point,
# this script, the interpreter, the host) under MONGOBENCH_CACHE/cli-exe: an unchanged CLI is not
# bundled again (PyInstaller takes 1.5-6 minutes here). CLI_EXE_CACHE=0 always builds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=hack/versions.env
source "$repo/hack/versions.env"
uv=${UV:-${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}/uv-$UV_VERSION/bin/uv}
command -v "$uv" >/dev/null || uv=uv
python=${PYTHON:-python3.11}  # an interpreter name or a version uv finds (or downloads: CI)
usage() { sed -n '2,18p' "$0" >&2; exit 2; }
cache=${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}/cli-exe
# Git Bash on Windows: a path the native tools (uv, Python) read too.
if command -v cygpath >/dev/null; then cache=$(cygpath -m "$cache"); fi

wheels() {
  local out=$1
  mkdir -p "$out"
  for package in mongobench-results mongobench-archive mongobench-cli; do
    (cd "$repo" && "$uv" build --quiet --package "$package" --out-dir "$out")
  done
  rm -f "$out/.gitignore"
  ls "$out"/*.whl
}

# What the executable is made of, as one sha256: the wheels (reproducible: hatchling fixes their
# timestamps), the lock (third-party pins, PyInstaller's included), the entry point, this script,
# and the interpreter and host it is built with.
exe_key() {
  local out=$1
  "$uv" run --quiet --no-project --python "$python" python - "$out"/mongobench_*-py3-none-any.whl \
    "$repo/uv.lock" "$here/krew/entry.py" "$here/release.sh" <<'PY'
import hashlib, platform, sys
h = hashlib.sha256(f"{sys.version} {sys.platform} {platform.machine()}".encode())
for name in sys.argv[1:]:
    h.update(name.rsplit("/", 1)[-1].encode() + b"\0")
    with open(name, "rb") as f:
        h.update(hashlib.sha256(f.read()).digest())
print(h.hexdigest()[:24])
PY
}

# The executable is built in a virtualenv holding only the CLI with every extra (the Kubernetes
# client, plotting, change points) and what they import (the lock's pins), so PyInstaller bundles
# nothing the CLI does not use.
bundle() {
  local out=$1 dest=$2 build venv bin
  build=$(mktemp -d)
  trap 'rm -rf "$build"; trap - RETURN' RETURN
  # Git Bash on Windows: a path the native tools (uv, PyInstaller) read, also in variables.
  if command -v cygpath >/dev/null; then build=$(cygpath -m "$build"); fi
  venv=$build/venv
  "$uv" venv --quiet --python "$python" "$venv"
  bin=$venv/bin
  [ -d "$bin" ] || bin=$venv/Scripts  # Windows
  # `uv sync` of the lock (not `uv pip install`): the same cached downloads as `make setup`'s.
  (cd "$repo" && UV_PROJECT_ENVIRONMENT=$venv "$uv" sync --frozen --quiet --no-default-groups \
    --package mongobench-cli --all-extras --no-install-workspace)
  (cd "$repo" && UV_PROJECT_ENVIRONMENT=$venv "$uv" sync --frozen --quiet --inexact \
    --only-group cli-bundle)
  "$uv" pip install --quiet --python "$venv" --no-deps "$out"/mongobench_*-py3-none-any.whl
  "$bin/pyinstaller" --onefile --noconfirm --log-level WARN --name kubectl-mongobench \
    --distpath "$build/exe" --workpath "$build/work" --specpath "$build" "$here/krew/entry.py"
  # Whole or absent: an interrupted build is not a cache entry; two builds at once each write
  # their own folder and the last one stays.
  mkdir -p "$dest.$$.tmp"
  cp "$build"/exe/kubectl-mongobench* "$dest.$$.tmp/"
  rm -rf "$dest"
  mv "$dest.$$.tmp" "$dest"
  # Only the newest few executables stay (each one ~100 MB; a branch switch may want one back).
  local old
  # shellcheck disable=SC2012  # the names are hex keys
  ls -1td "$cache"/[0-9a-f]*[0-9a-f] | tail -n +5 | while read -r old; do rm -rf "$old"; done
}

archive() {
  local version=$1 out=$2 dest exe
  ls "$out"/mongobench_cli-*.whl >/dev/null 2>&1 || wheels "$out" >/dev/null
  dest=$cache/$(exe_key "$out")
  if [ "${CLI_EXE_CACHE:-1}" = 0 ] || ! ls "$dest"/kubectl-mongobench* >/dev/null 2>&1; then
    bundle "$out" "$dest"
  else
    echo "release.sh: kubectl-mongobench unchanged, from the cache ($dest)" >&2
  fi
  exe=$(ls "$dest"/kubectl-mongobench*)
  "$uv" run --quiet --no-project --python "$python" "$here/krew/krew.py" archive "$version" "$exe" \
    "$repo/LICENSE" "$out"
}

manifest() {
  "$uv" run --quiet --no-project --python "$python" "$here/krew/krew.py" manifest "$1" "$2" "$3"
}

# The checksums of everything the Release carries (the manifest names the archives' own).
# Without any archive (every platform's build failed) the Release still gets the packages: no
# manifest then, the sums of what there is.
assets() {
  local version=$1 url=$2 out=$3
  rm -f "$out/mongobench.yaml"
  if ls "$out"/kubectl-mongobench_* >/dev/null 2>&1; then
    manifest "$version" "$url" "$out" >/dev/null
  fi
  (
    cd "$out" && rm -f checksums.txt
    shopt -s nullglob
    local files=(kubectl-mongobench_* mongobench_*.whl mongobench_*.tar.gz mongobench.yaml)
    if [ ! -f mongobench.yaml ]; then unset 'files[-1]'; fi
    sha256sum -- "${files[@]}" >checksums.txt.tmp && mv checksums.txt.tmp checksums.txt
  )
  ls "$out"/*
}

case "${1:-}" in
  wheels) wheels "${2:-$repo/dist/cli}" ;;
  archive) [ $# -ge 2 ] || usage; archive "$2" "${3:-$repo/dist/cli}" ;;
  manifest) [ $# -ge 3 ] || usage; manifest "$2" "$3" "${4:-$repo/dist/cli}" ;;
  assets) [ $# -ge 3 ] || usage; assets "$2" "$3" "${4:-$repo/dist/cli}" ;;
  missing) [ $# -ge 2 ] || usage; "$uv" run --quiet --no-project --python "$python" \
    "$here/krew/krew.py" missing "$2" "${3:-$repo/dist/cli}" ;;
  *) usage ;;
esac
