#!/usr/bin/env bash
# The browser tests (tests/browser/test_*.py: report.html and the labelling page in headless
# Chromium, and in headless Firefox where it is installed) with the venv of scripts/browser/setup.sh. Builds nothing: the binary is $SCOREKIT or
# target/debug/scorekit; the benchmark files come from the test data cache
# ($SCOREKIT_TEST_DATA, default target/test-data, filled by scripts/test-data.sh).
#
#   scripts/browser/run.sh                       # every browser test
#   scripts/browser/run.sh test_report_html      # one file (module name)
#   SCOREKIT_SCREENSHOTS=1 scripts/browser/run.sh test_report_html   # also docs/img/report-*.png
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=build/browser-venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "no $VENV: run scripts/browser/setup.sh first" >&2
  exit 2
fi
export SCOREKIT=${SCOREKIT:-$PWD/target/debug/scorekit}
export SCOREKIT_TEST_DATA=${SCOREKIT_TEST_DATA:-$PWD/target/test-data}
if [ $# -eq 0 ]; then
  exec "$VENV/bin/python" -m unittest discover -s tests/browser -p 'test_*.py' -v
fi
cd tests/browser
exec "../../$VENV/bin/python" -m unittest -v "$@"
