#!/bin/sh
# Installs mongobench's Python packages into a fresh virtualenv, the third-party dependencies
# exactly as uv.lock pins them (hashes checked). The image build stages run this, and so does
# the test suite (hack/tests/test_image_install.py).
#
#   install-python.sh PREFIX EXPORT-SELECTION WORKSPACE-PATH...
#     PREFIX            the virtualenv to create, e.g. /opt/mongobench
#     EXPORT-SELECTION  what `uv export` exports: "--package mongobench", or
#                       "--only-group locust-image" (one word list, quoted)
#     WORKSPACE-PATH    the project's own packages, installed without dependencies
# Run from the repository root (pyproject.toml, uv.lock and the packages' folders). UV (default
# `uv`) and PYTHON (default `python3`) name the interpreters. OFFLINE=1 installs with `uv pip`
# from uv's cache alone, hashes checked the same (the tests: no network beyond loopback).
set -eu
prefix=$1
selection=$2
shift 2
uv=${UV:-uv}
python=${PYTHON:-python3}
requirements=$(mktemp)
# shellcheck disable=SC2086  # the selection is a list of words
"$uv" export --frozen --no-dev --no-emit-workspace --no-header --quiet $selection -o "$requirements"
"$python" -m venv "$prefix"
# --no-deps: the export is already the whole closure uv resolved, overrides included (Otava's
# own pins of numpy and scipy, which the lock overrides, would otherwise fail pip's check).
if [ "${OFFLINE:-0}" = 1 ]; then
  # Copies, not links: the environment must not share files with the cache.
  "$uv" pip install --offline --link-mode=copy --quiet --python "$prefix/bin/python" \
    --require-hashes --no-deps -r "$requirements"
  "$uv" pip install --offline --link-mode=copy --quiet --python "$prefix/bin/python" \
    --no-deps "$@"
else
  "$prefix/bin/pip" install --no-cache-dir --disable-pip-version-check --quiet --require-hashes \
    --no-deps -r "$requirements"
  "$prefix/bin/pip" install --no-cache-dir --disable-pip-version-check --quiet --no-deps "$@"
fi
rm -f "$requirements"
