#!/usr/bin/env bash
# VNN-COMP entry point: install_tool.sh v1
#
# Creates the repository's .venv with cfmlir and its pinned dependencies (`make setup`; needs python3 >= 3.10
# with venv, and make).
set -eu
if [ "$#" -ne 1 ] || [ "$1" != "v1" ]; then
    echo "error: usage: install_tool.sh v1" >&2
    exit 1
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
make -C "$ROOT" setup
