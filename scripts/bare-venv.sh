#!/usr/bin/env bash
# A venv with nothing but the upstream harness (determined==0.38.1 and what it pulls in, pinned by
# tests/compat/requirements.txt): no TensorFlow, no torch, no tensorboard — the venv a new user of
# the process runtime has. tests/compat/test_new_user.py runs a Core API trial in it.
#
#   scripts/bare-venv.sh DIR      prints DIR/bin/python as its last line
#
# Idempotent: a stamp records the requirements' hash; about 45 s and 150 MB when (re)built.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:?usage: scripts/bare-venv.sh DIR}
req=$repo/tests/compat/requirements.txt
want="bare req=$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$venv/.resolute-env" 2>/dev/null || true)" != "$want" ]; then
  rm -rf "$venv"
  started=$SECONDS
  "${PYTHON:-/usr/bin/python3}" -m venv "$venv"
  PIP_NO_CACHE_DIR=${PIP_NO_CACHE_DIR:-1} "$venv/bin/pip" install -q --disable-pip-version-check \
    determined==0.38.1 -c "$req" >&2
  echo "$want" >"$venv/.resolute-env"
  echo "bare-venv: built $venv in $((SECONDS - started)) s" >&2
fi
echo "$venv/bin/python"
