#!/usr/bin/env bash
# Creates (or re-syncs) the Python environment that runs the compatibility suite (tests/compat) and
# the trials its agent starts: the upstream determined==0.38.1 CLI/SDK/harness, pytest,
# scikit-learn, tensorboard, numpy 1.26.4 (tests/compat/requirements.txt, all pinned), and, where
# available, PyTorch.
#
#   scripts/python-env.sh [VENV_DIR]      (default: .venv in the repository root)
#
# PyTorch: PyPI's torch is CUDA-only and not usable here, so torch comes from Debian's
# python3-torch (1.13.1, CPU) and the venv is made with `/usr/bin/python3 -m venv
# --system-site-packages`. If python3-torch is missing it is apt-installed when running as root
# with CI or RESOLUTE_INSTALL_SYSTEM_PACKAGES set; otherwise the venv is made without torch and the
# PyTorch example tests skip (the suite says why).
#
# Distributed PyTorch: torch 1.13's `torch.distributed.run` fails under Python 3.11 before any
# worker starts (`Std.from_str` returns None). It is not patched here: the agent's harness shim
# (crates/agent/src/harness_shim_distributed.py) applies torch 2.0's one-line fix to that
# classmethod in each trial process when the installed torch needs it, so this venv, torch's files
# and the upstream harness stay as installed. PyPI's torch 2.x (CUDA build, ~3.1 GB with its nvidia
# wheels, unusable without the CUDA libraries) was weighed against Debian's 0.15 GB download /
# 0.65 GB on disk and not taken.
#
# Idempotent: a stamp in the venv records the requirements' hash, the base interpreter and whether
# torch is visible; the venv is rebuilt when the mode changes and re-synced when the requirements
# change, and left alone otherwise. Prints `torch: yes|no` and the venv's python as its last line.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$repo/.venv}
req=$repo/tests/compat/requirements.txt
system_python=/usr/bin/python3

# find_spec, not `import torch`: the import takes seconds and the sync below checks it anyway.
has_system_torch() {
  [ -x "$system_python" ] && "$system_python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null
}

if ! has_system_torch && [ "$(id -u)" -eq 0 ] && [ -n "${CI:-}${RESOLUTE_INSTALL_SYSTEM_PACKAGES:-}" ] &&
  command -v apt-get >/dev/null; then
  echo "python-env: installing Debian python3-torch (CPU; ~150 MB download, ~650 MB on disk)" >&2
  started=$SECONDS
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null </dev/null ||
    echo "python-env: apt-get install python3-torch failed; continuing without torch" >&2
  echo "python-env: python3-torch step took $((SECONDS - started)) s" >&2
fi

if has_system_torch; then
  base=$system_python
  system_site=true
else
  base=${PYTHON:-python3}
  system_site=false
  echo "python-env: no PyTorch (Debian python3-torch not installed): the PyTorch example tests will be skipped." >&2
  echo "python-env: to get it: apt-get install --no-install-recommends python3-torch, then rerun this script." >&2
fi

want="req=$(sha256sum "$req" | cut -d' ' -f1) base=$base system_site=$system_site"
stamp=$venv/.resolute-env
have=$(cat "$stamp" 2>/dev/null || true)

# A venv made in the other mode (with/without system site packages) cannot be converted in place.
if [ -f "$venv/pyvenv.cfg" ] && ! grep -qx "include-system-site-packages = $system_site" "$venv/pyvenv.cfg"; then
  echo "python-env: $venv was made with a different include-system-site-packages; recreating it" >&2
  rm -rf "$venv"
  have=
fi

if [ ! -x "$venv/bin/python" ]; then
  flags=()
  [ "$system_site" = false ] || flags+=(--system-site-packages)
  "$base" -m venv "${flags[@]}" "$venv"
  have=
fi

if [ "$have" != "$want" ]; then
  started=$SECONDS
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"
  # Check the combination that matters before recording success: torch must see numpy 1.x.
  if [ "$system_site" = true ]; then
    "$venv/bin/python" -c 'import numpy, torch; torch.from_numpy(numpy.zeros(1)); import determined.pytorch'
  fi
  "$venv/bin/python" -c 'import determined.core, sklearn'
  echo "$want" >"$stamp"
  echo "python-env: synced $venv in $((SECONDS - started)) s" >&2
fi

echo "python-env: torch: $([ "$system_site" = true ] && echo yes || echo no)" >&2
echo "$venv/bin/python"
