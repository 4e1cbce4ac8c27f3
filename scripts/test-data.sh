#!/usr/bin/env bash
# Fill the test data cache: every dataset part of data/test-parts.txt, pulled with `scorekit data
# pull` into $SCOREKIT_TEST_DATA (default target/test-data, where .cargo/config.toml points the
# tests), checked against the manifests' pins. Idempotent: what is cached is not fetched again.
#
#   scripts/test-data.sh [SCOREKIT_BINARY]     # default: build target/debug/scorekit first
#
# Where the files come from, first that applies:
#   - $SHARED_DATA, else ../shared/data beside the repository (the project's copy): laid out as
#     upstream clones by scripts/data/shared-mirror.sh and pulled with --from (no network);
#   - the network: the pinned upstream commits, or the mirror in $SCOREKIT_DATA_ENDPOINT.
# A part that cannot be had is reported and the script goes on (exit 0): the tests that read it
# then fail, naming the `scorekit data pull` that fetches it. SCOREKIT_TEST_DATA_STRICT=1 makes
# such a failure the script's exit status instead.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

cache=${SCOREKIT_TEST_DATA:-target/test-data}
case $cache in /*) ;; *) cache=$root/$cache ;; esac

if [ $# -ge 1 ]; then
  sk=$1
else
  cargo build --quiet --bin scorekit
  target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  sk=$target/debug/scorekit
fi

shared=${SHARED_DATA:-$root/../shared/data}
mirror=
if [ -d "$shared" ]; then
  mirror=$(mktemp -d)
  trap 'rm -rf "$mirror"' EXIT
  scripts/data/shared-mirror.sh "$shared" "$mirror"
  echo "test-data: $cache from the project copy $shared" >&2
else
  echo "test-data: $cache from ${SCOREKIT_DATA_ENDPOINT:-the pinned upstream commits} (no $shared)" >&2
fi

failed=()
for spec in $(grep -v '^#' data/test-parts.txt); do
  from=()
  [ -z "$mirror" ] || from=(--from "$mirror/${spec%%:*}")
  if ! env -u SCOREKIT_DATA_MANIFESTS SCOREKIT_DATA="$cache" \
    "$sk" data pull "$spec" --quiet "${from[@]}" >/dev/null; then
    failed+=("$spec")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "test-data: not pulled: ${failed[*]}; the tests that read them will fail" >&2
  [ "${SCOREKIT_TEST_DATA_STRICT:-0}" = 1 ] && exit 1
else
  echo "test-data: $(grep -vc '^#' data/test-parts.txt) parts in $cache" >&2
fi
