#!/bin/sh
# Runs the Python client's tests with an interpreter that has pytest and msgpack: $PYTHON when
# set, else the first of python3, /usr/bin/python3, python3.N that has both.
set -eu
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  for candidate in python3 /usr/bin/python3 python3.13 python3.12 python3.11 python3.10 python3.9; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import pytest, msgpack" >/dev/null 2>&1; then
      PYTHON=$candidate
      break
    fi
  done
fi
if [ -z "${PYTHON:-}" ]; then
  echo "python tests: no Python interpreter with both pytest and msgpack (python3 -m pip install msgpack pytest)" >&2
  exit 1
fi
exec "$PYTHON" -m pytest -q -p no:cacheprovider tests
