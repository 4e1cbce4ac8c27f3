#!/usr/bin/env bash
# How long an incremental rebuild takes after a code edit of one suite file: REV against the
# working tree, alternated, in the dev profile. Each side builds in its own worktree and target
# folder once (untimed), then for each round: a string literal of crates/suites/src/muse/score.rs
# is changed, `cargo build --bin scorekit` is timed, and the file is restored.
#
#   scripts/bench/rebuild_after_edit.sh REV [ROUNDS]     # e.g. a64c00a 2
#
# Environment: OLD_TARGET_DIR (default target/rebuild-old), NEW_TARGET_DIR (default target).
# A comment-only edit is not enough: cargo sees unchanged content and rebuilds nothing; nor is
# the same edit twice (rustc's incremental cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
REV=${1:?REV}
ROUNDS=${2:-2}
OLD_TARGET=${OLD_TARGET_DIR:-$REPO/target/rebuild-old}
NEW_TARGET=${NEW_TARGET_DIR:-$REPO/target}
OLD_TREE=$(mktemp -d "${TMPDIR:-/tmp}/rebuild-old.XXXXXX")/tree
trap 'git -C "$REPO" worktree remove --force "$OLD_TREE" 2>/dev/null || true' EXIT
git worktree add --quiet --detach "$OLD_TREE" "$REV"
FILE=crates/suites/src/muse/score.rs
build() { (cd "$1" && CARGO_TARGET_DIR=$2 cargo build --quiet --bin scorekit); }
for round in $(seq "$ROUNDS"); do
  for side in old new; do
    if [ "$side" = old ]; then dir=$OLD_TREE tgt=$OLD_TARGET; else dir=$REPO tgt=$NEW_TARGET; fi
    cp "$dir/$FILE" "$dir/$FILE.orig"
    build "$dir" "$tgt"
    # A literal new to each round: rustc's incremental cache would answer a repeated edit.
    sed -i "s/\"rule\".into()/\"rule-$round\".into()/" "$dir/$FILE"
    grep -q "\"rule-$round\"" "$dir/$FILE" || { echo "edit failed in $dir" >&2; exit 1; }
    start=$(date +%s.%N)
    build "$dir" "$tgt"
    end=$(date +%s.%N)
    mv "$dir/$FILE.orig" "$dir/$FILE"
    echo "round $round $side: $(python3 -c "print(f'{$end - $start:.1f}')") s (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
build "$REPO" "$NEW_TARGET"
