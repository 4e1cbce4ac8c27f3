#!/usr/bin/env bash
# The test command of README.md: every unit and integration test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-targets "$@"
