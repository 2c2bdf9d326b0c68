#!/usr/bin/env bash
# The project's two commands, each doing all of the set-up first:
#   bash dev.sh demo    the main job (LeNet on scikit-learn's digits with Module.fit)
#   bash dev.sh test    the whole test suite
# Set-up: a virtual environment in .venv (MX_VENV overrides), the packages in
# requirements-dev.txt, and one editable install of the meta-package with
# every package under packages/.  It is redone when any build file changes.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=${MX_VENV:-.venv}

setup() {
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "dev.sh: Python 3.11 or newer is needed; $PYTHON is $("$PYTHON" -V 2>&1)" >&2
    exit 1
  }
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  local stamp
  stamp=$(cat requirements-dev.txt pyproject.toml meson.build meson.options \
              packages/*/pyproject.toml packages/*/meson.build packages/*/meson.options \
              packages/*/*/meson.build packages/*/*/*/meson.build packages/*/*/*/*/meson.build 2>/dev/null | cksum)
  if [ "$(cat "$VENV/.mx-setup" 2>/dev/null)" != "$stamp" ]; then
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements-dev.txt
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-build-isolation \
      --no-deps -e . -Csetup-args=-Dpackages=true -Cbuild-dir=build/cp311
    echo "$stamp" > "$VENV/.mx-setup"
  fi
  # Fails loudly if the install is broken; the editable hook rebuilds here.
  "$VENV/bin/python" -c 'import mx, mx_engine._engine'
}

case "${1:-}" in
  demo)
    setup
    shift
    exec "$VENV/bin/python" examples/lenet_digits.py "$@"
    ;;
  test)
    setup
    shift
    exec "$VENV/bin/python" -m pytest "$@"
    ;;
  *)
    echo "usage: bash dev.sh demo | test [pytest args]" >&2
    exit 2
    ;;
esac
