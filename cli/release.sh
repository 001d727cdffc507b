#!/usr/bin/env bash
# The CLI's release artifacts (make cli-dist, make cli-krew; the release workflow runs the same).
#   cli/release.sh wheels [OUT]                  wheels and sdists of mongobench-results,
#                                                mongobench-archive and mongobench-cli (uv build)
#   cli/release.sh archive VERSION [OUT]         this host's self-contained kubectl-mongobench
#                                                (PyInstaller) in its krew archive; needs the wheels
#   cli/release.sh manifest VERSION URL [OUT]    the krew manifest for every archive in OUT, each
#                                                published under URL/<archive name>
# OUT defaults to dist/cli. Third-party packages come from uv.lock (hashes checked); with
# UV_OFFLINE=1 from the uv cache only (the tests do that: `make setup` fills it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
UV_VERSION=0.13.8
uv=${UV:-${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}/uv-$UV_VERSION/bin/uv}
command -v "$uv" >/dev/null || uv=uv
python=${PYTHON:-python3.11}  # an interpreter name or a version uv finds (or downloads: CI)
usage() { sed -n '2,9p' "$0" >&2; exit 2; }

wheels() {
  local out=$1
  mkdir -p "$out"
  for package in mongobench-results mongobench-archive mongobench-cli; do
    (cd "$repo" && "$uv" build --quiet --package "$package" --out-dir "$out")
  done
  rm -f "$out/.gitignore"
  ls "$out"/*.whl
}

# The executable is built in a virtualenv holding only the CLI and what it imports (the lock's
# pins), so PyInstaller bundles nothing the CLI does not use.
archive() {
  local version=$1 out=$2 build venv bin exe
  ls "$out"/mongobench_cli-*.whl >/dev/null 2>&1 || wheels "$out" >/dev/null
  build=$(mktemp -d)
  trap 'rm -rf "$build"' RETURN
  # Git Bash on Windows: a path the native tools (uv, PyInstaller) read, also in variables.
  if command -v cygpath >/dev/null; then build=$(cygpath -m "$build"); fi
  venv=$build/venv
  "$uv" venv --quiet --python "$python" "$venv"
  bin=$venv/bin
  [ -d "$bin" ] || bin=$venv/Scripts  # Windows
  # `uv sync` of the lock (not `uv pip install`): the same cached downloads as `make setup`'s.
  (cd "$repo" && UV_PROJECT_ENVIRONMENT=$venv "$uv" sync --frozen --quiet --no-default-groups \
    --package mongobench-cli --no-install-workspace)
  (cd "$repo" && UV_PROJECT_ENVIRONMENT=$venv "$uv" sync --frozen --quiet --inexact \
    --only-group cli-bundle)
  "$uv" pip install --quiet --python "$venv" --no-deps "$out"/mongobench_*-py3-none-any.whl
  "$bin/pyinstaller" --onefile --noconfirm --log-level WARN --name kubectl-mongobench \
    --distpath "$build/exe" --workpath "$build/work" --specpath "$build" "$here/krew/entry.py"
  exe=$(ls "$build"/exe/kubectl-mongobench*)
  "$bin/python" "$here/krew/krew.py" archive "$version" "$exe" "$repo/LICENSE" "$out"
}

case "${1:-}" in
  wheels) wheels "${2:-$repo/dist/cli}" ;;
  archive) [ $# -ge 2 ] || usage; archive "$2" "${3:-$repo/dist/cli}" ;;
  manifest)
    [ $# -ge 3 ] || usage
    "$uv" run --quiet --no-project --python "$python" "$here/krew/krew.py" manifest "$2" "$3" "${4:-$repo/dist/cli}"
    ;;
  *) usage ;;
esac
