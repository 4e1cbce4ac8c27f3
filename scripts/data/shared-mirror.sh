#!/usr/bin/env bash
# Lay out a project copy of the benchmark data (../shared/data) as copies of the upstream
# repositories, one folder per dataset, so that `scorekit data pull NAME --from DEST/NAME` can
# take its files by their upstream paths. Only links are made; nothing is copied.
#
#   scripts/data/shared-mirror.sh ../shared/data /tmp/mirror
#   scorekit data pull possible-stories:test --from /tmp/mirror/possible-stories
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SHARED_DATA DEST" >&2; exit 2; }
src=$(cd "$1" && pwd)
dest=$2
mkdir -p "$dest"

# possible-stories: the copy drops upstream's dataset/ folder.
mkdir -p "$dest/possible-stories/dataset"
for f in "$src"/possible-stories/*.jsonl; do
  ln -sfn "$f" "$dest/possible-stories/dataset/$(basename "$f")"
done
ln -sfn "$src/possible-stories/README.md" "$dest/possible-stories/README.md"

# grasp and muse keep upstream's paths.
ln -sfn "$src/grasp" "$dest/grasp"
ln -sfn "$src/muse" "$dest/muse"

# mint: upstream's data/outputs is kept under results/.
mkdir -p "$dest/mint/data"
ln -sfn "$src/mint/data/processed" "$dest/mint/data/processed"
ln -sfn "$src/mint/results/data/outputs" "$dest/mint/data/outputs"
ln -sfn "$src/mint/LICENSE" "$dest/mint/LICENSE"
