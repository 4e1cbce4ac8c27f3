#!/usr/bin/env bash
# What the browser tests (tests/browser/, scripts/browser/run.sh) need, idempotent:
# - Debian's chromium and chromium-driver (apt-get, when /usr/bin/chromium or chromedriver is
#   missing; needs root, as on CI's fresh Debian machine);
# - Debian's firefox-esr (apt-get, when missing): tests/browser/test_firefox.py drives it over
#   the WebDriver BiDi it serves itself (no geckodriver, which Debian does not package);
# - a venv at build/browser-venv with a pinned selenium (from PyPI, once).
#
#   scripts/browser/setup.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
# 4.40.0: 4.52.0 (the newest) needs a certifi newer than this project's package index had
# (2026-12-06); 4.40.0's dependencies resolve there.
SELENIUM_VERSION=4.40.0
VENV=build/browser-venv

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v firefox-esr >/dev/null || command -v firefox >/dev/null || missing+=(firefox-esr)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== browser: installing Debian's ${missing[*]}"
  sudo_=
  if [ "$(id -u)" != 0 ]; then sudo_=sudo; fi
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import selenium, sys; sys.exit(selenium.__version__ != '$SELENIUM_VERSION')" 2>/dev/null; then
  echo "== browser: venv $VENV with selenium $SELENIUM_VERSION"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "selenium==$SELENIUM_VERSION"
fi
echo "== browser: $(chromium --version 2>/dev/null | head -1), $(chromedriver --version | cut -d' ' -f1-2), $( (firefox-esr --version || firefox --version) 2>/dev/null | head -1), selenium $("$VENV/bin/python" -c 'import selenium; print(selenium.__version__)')"
