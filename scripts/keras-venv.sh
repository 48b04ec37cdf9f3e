#!/usr/bin/env bash
# The Python that runs the TensorFlow Keras examples (examples/iris_tf_keras,
# examples/fashion_mnist_tf_keras) and seed 001's inference snippet: tensorflow-cpu 2.15.1
# (Keras 2), numpy 1.26.4 and the upstream harness determined==0.38.1, all pinned in
# tests/compat/requirements-keras.txt. A venv of its own: TF 2.15 needs protobuf < 5 and
# tensorboard 2.15, which the compat venv (.venv) pins newer.
#
#   scripts/keras-venv.sh DIR     prints DIR/bin/python as its last line
#
# Idempotent (a stamp records the requirements' hash). Measured on the 2-core CI-sized machine:
# ~90 s and ~1.6 GB on disk (the tensorflow-cpu wheel is ~210 MB).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:?usage: scripts/keras-venv.sh DIR}
req=$repo/tests/compat/requirements-keras.txt
want="keras req=$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$venv/.resolute-env" 2>/dev/null || true)" != "$want" ]; then
  rm -rf "$venv"
  started=$SECONDS
  "${PYTHON:-/usr/bin/python3}" -m venv "$venv"
  PIP_NO_CACHE_DIR=${PIP_NO_CACHE_DIR:-1} "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  echo "$want" >"$venv/.resolute-env"
  echo "keras-venv: built $venv in $((SECONDS - started)) s" >&2
fi
echo "$venv/bin/python"
