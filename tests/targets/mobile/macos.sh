#!/usr/bin/env bash
# On a Mac with Xcode: the checks CoreML prediction and a Swift toolchain make possible, which Linux cannot run.
#   tests/targets/mobile/macos.sh [BUNDLE...]
# 1. the pytest tests marked `macos` (CoreML prediction of the .mlpackage against the numpy evaluation);
# 2. `swift build` and `swift test` (the generated XCTest) in each iphone bundle given, e.g. built on Linux with
#    `edgepack build MODEL --profile iphone --input-shape ...` and copied here.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV="${EDGEPACK_VENV:-.venv-macos}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet -e ".[test]"
"$VENV/bin/edgepack" samples >/dev/null
"$VENV/bin/python" -m pytest -q -m macos tests/targets/mobile
for bundle in "$@"; do
  (cd "$bundle" && swift package dump-package >/dev/null && swift build && swift test)
done
