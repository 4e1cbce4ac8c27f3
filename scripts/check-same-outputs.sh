#!/usr/bin/env bash
# Do a refactoring's outputs move? Builds scorekit at git revision REV (a temporary
# `git worktree`) and from the working tree, runs both on the same inputs, and compares:
# metrics.json numbers (every field but scorekit_version and binary), items.jsonl byte for byte, and every
# other file a run writes (report.md, tables.md/.tex, sr.csv, sr_curves.svg, recheck.csv, ...)
# byte for byte, with the one wall-clock line of MINT's report masked; stdout is compared too.
#
#   scripts/check-same-outputs.sh [REV]      # REV defaults to main
#
# Runs: the main job (scripts/main-job.sh: MINT on the real trajectories, MuSE on the HuggingGPT
# plans, story Dissimilarity with all-MiniLM-L6-v2 on the test split), MINT --recheck (also on a
# folder with an incomplete configuration, a misplaced results.jsonl and a stray file), GRASP on
# results files built from the real prompts (level1-binary cot, level1-open, level2 --pairwise),
# the story run with the tiny BERT judge the tests use, `judge eval` of that judge on the test
# split with its calibration (a revision before judge eval wrote the output contract's
# metrics.json is compared field by field through the move: see judge_eval_moves), GRASP on a synthetic Level 2 file with
# unknown scene names and on two models at once, and two-shard runs of MINT, MuSE and GRASP put
# back together by `scorekit merge`.
#
# Environment: PROFILE=release (default) or dev; OLD_TARGET_DIR, the old revision's own cargo
# target folder (default: "$CARGO_TARGET_DIR-old", or target/same-outputs-old); KEEP=1 keeps
# the run folders. Exit 0: identical; 1: something moved (each difference is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
REV=${1:-main}
PROFILE=${PROFILE:-release}
NEW_TARGET=${CARGO_TARGET_DIR:-$REPO/target}
OLD_TARGET=${OLD_TARGET_DIR:-${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR-old}}
OLD_TARGET=${OLD_TARGET:-$REPO/target/same-outputs-old}
SHARED=$(cd ../shared/data && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/same-outputs.XXXXXX")
OLD_TREE=$WORK/old-tree
cleanup() {
  git -C "$REPO" worktree remove --force "$OLD_TREE" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "run folders kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

case $PROFILE in
  release) flag=--release; dir=release ;;
  dev) flag=; dir=debug ;;
  *) echo "PROFILE must be release or dev" >&2; exit 2 ;;
esac

echo "== build $REV ($(git rev-parse --short "$REV")) into $OLD_TARGET"
git worktree add --quiet --detach "$OLD_TREE" "$REV"
(cd "$OLD_TREE" && CARGO_TARGET_DIR=$OLD_TARGET cargo build $flag --quiet --bin scorekit)
echo "== build the working tree into $NEW_TARGET"
CARGO_TARGET_DIR=$NEW_TARGET cargo build $flag --quiet --bin scorekit
cp "$OLD_TARGET/$dir/scorekit" "$WORK/scorekit-old"
cp "$NEW_TARGET/$dir/scorekit" "$WORK/scorekit-new"

# The story run with a judge calibrates it on possible-stories:endings: read from the test data
# cache (scripts/test-data.sh), never fetched. Each side calibrates afresh (its own cache).
export SCOREKIT_DATA=${SCOREKIT_DATA:-${SCOREKIT_TEST_DATA:-$REPO/target/test-data}}

echo "== inputs"
IN=$WORK/inputs
python3 scripts/same-outputs/make_inputs.py "$IN"
scripts/setup-test-fixtures.sh >/dev/null
MINILM=$REPO/fixtures-cache/all-MiniLM-L6-v2
STORY=(--dataset "$SHARED/possible-stories/test.jsonl" --generations "$REPO/data/story/test-demo-generations.jsonl")
MUSE=(--queries "$SHARED/muse/MuSE_Benchmark/queries.json" --plans "$REPO/tests/data/muse/hugginggpt.jsonl")
MINT=(--outputs "$SHARED/mint/results/data/outputs")

# run NAME ARGS...: both binaries, --out $WORK/{old,new}/NAME, stdout kept beside.
run() {
  local name=$1
  shift
  for side in old new; do
    mkdir -p "$WORK/$side"
    SCOREKIT_CALIBRATION_CACHE="$WORK/calibration-cache-$side" \
      "$WORK/scorekit-$side" "$@" --out "$WORK/$side/$name" --force --quiet \
      >"$WORK/$side/$name.stdout" 2>"$WORK/$side/$name.stderr" || {
      echo "$side: scorekit $* failed:" >&2
      cat "$WORK/$side/$name.stderr" >&2
      exit 1
    }
  done
  echo "ran $name"
}

run mint mint "${MINT[@]}"
run mint-recheck mint "${MINT[@]}" --recheck
run mint-odd-folder mint --outputs "$IN/mint-odd" --recheck
run muse muse "${MUSE[@]}"
run grasp-level1-binary grasp --responses "$IN/grasp/level1-binary/results.csv" --bootstrap 500
run grasp-level1-open grasp --responses "$IN/grasp/level1-open/results.csv"
run grasp-level2-pairwise grasp --responses "$IN/grasp/level2/results.csv" --pairwise
# GRASP's streamed path with unknown scene names kept, and its in-memory path (two models).
python3 scripts/bench/grasp_rows.py "$IN/grasp-synthetic.csv" 4000 >/dev/null
run grasp-unknown-scenes grasp --responses "$IN/grasp-synthetic.csv" --test level2 \
  --allow-unknown-scenes --pairwise
run grasp-two-models grasp --responses "$IN/grasp/level1-binary/results.csv" \
  "$IN/grasp/level1-binary/results.csv" --labels A,B
run story-minilm story "${STORY[@]}" --embedder "$MINILM" --skip-judge
run story-tiny-judge story "${STORY[@]}" --judge "$IN/judge" --skip-embedder
run judge-eval judge eval --judge "$IN/judge" --dataset "$SHARED/possible-stories/test.jsonl"
for s in 0 1; do
  run "mint-shard$s" mint "${MINT[@]}" --shard "$s/2"
  run "muse-shard$s" muse "${MUSE[@]}" --shard "$s/2"
  run "grasp-shard$s" grasp --responses "$IN/grasp/level2/results.csv" --pairwise --shard "$s/2"
done
for side in old new; do
  for suite in mint muse grasp; do
    "$WORK/scorekit-$side" merge --parts "$WORK/$side/$suite-shard0" "$WORK/$side/$suite-shard1" \
      --out "$WORK/$side/$suite-merged" --force >"$WORK/$side/$suite-merged.stdout"
  done
done
echo "ran merges"

echo "== compare"
python3 - "$WORK" <<'PY'
import json, re, sys
from pathlib import Path

work = Path(sys.argv[1])
old, new = work / "old", work / "new"
moved = []


def mask(name, text):
    # The wall-clock line of MINT's report and the output folder printed on stdout.
    text = re.sub(rb"tabulated in [0-9.]+ s", b"tabulated in <t> s", text)
    text = text.replace(bytes(old), b"<out>").replace(bytes(new), b"<out>")
    return text


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}:\n    old: {x[:200]!r}\n    new: {y[:200]!r}"
    return f"lengths {len(a)} vs {len(b)}"


def walk(path, a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                yield f"{path}.{k}: only in {'new' if k in b else 'old'}"
            else:
                yield from walk(f"{path}.{k}", a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from walk(f"{path}[{i}]", x, y)
    elif a != b or type(a) is not type(b):
        yield f"{path}: {json.dumps(a)[:200]} vs {json.dumps(b)[:200]}"


# Files a newer revision adds on purpose (an older one does not write them).
ADDED = {"report.html"}


def judge_eval_moves(o, n):
    """judge eval's metrics.json of a revision before it went through the run loop (its own
    shape) against the output contract's: every old field, where it lives now."""
    if "metrics" in o:
        return list(walk("", o, n))
    m, s = n["metrics"], n["settings"]
    pairs = [(f"metrics.{k}", o.get(k), m.get(k)) for k in
             ("questions", "passages", "chance", "accuracy", "consistency",
              "consistency_definition", "picks", "cyclic")]
    pairs += [("models[0]", o["judge"], n["models"][0]), ("inputs[0].sha256", o["dataset"]["sha256"], n["inputs"][0]["sha256"])]
    pairs += [(f"settings.{k}", o.get(k), s.get(k)) for k in ("judge_kind", "engine", "dataset", "letter")]
    pairs += [("settings.bootstrap", o["bootstrap"], {"resamples": s["bootstrap"], "seed": s["seed"]})]
    c = o.get("calibration")
    if c is not None:
        pairs += [("metrics.calibration", c["summary"], m.get("calibration")),
                  ("metrics.judge_resolution", {"dataset": c["dataset"], "human": c["human"]}, m.get("judge_resolution")),
                  ("settings.calibration", c["settings"], s.get("calibration")),
                  ("inputs[1:]", c["inputs"], n["inputs"][1:]),
                  ("datasets", c["datasets"], n.get("datasets", []))]
    return [d for path, a, b in pairs for d in walk(path, a, b)]


runs = sorted(p.name for p in old.iterdir() if p.is_dir())
files = 0
for run in runs:
    names = sorted({p.name for p in (old / run).iterdir()} | {p.name for p in (new / run).iterdir()})
    for name in names:
        a, b = old / run / name, new / run / name
        if name in ADDED and b.exists() and not a.exists():
            continue
        if not a.exists() or not b.exists():
            moved.append(f"{run}/{name}: only in {'new' if b.exists() else 'old'}")
            continue
        files += 1
        if name == "metrics.json":
            ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
            for d in (ja, jb):
                d.pop("scorekit_version", None)
                d.pop("binary", None)  # which build ran (older revisions do not write it)
            diffs = judge_eval_moves(ja, jb) if run.startswith("judge-eval") else walk("", ja, jb)
            moved += [f"{run}/metrics.json{d}" for d in diffs]
        elif name == "items.jsonl":
            if a.read_bytes() != b.read_bytes():
                moved.append(f"{run}/items.jsonl: {first_difference(a.read_bytes(), b.read_bytes())}")
        else:
            ta, tb = mask(name, a.read_bytes()), mask(name, b.read_bytes())
            if ta != tb:
                moved.append(f"{run}/{name}: {first_difference(ta, tb)}")
    for ext in ("stdout",):
        a, b = old / f"{run}.{ext}", new / f"{run}.{ext}"
        files += 1
        ta, tb = mask(ext, a.read_bytes()), mask(ext, b.read_bytes())
        if ta != tb:
            moved.append(f"{run}.{ext}: {first_difference(ta, tb)}")

for m in moved:
    print("MOVED", m)
print(f"{len(runs)} runs, {files} files compared: "
      + ("identical" if not moved else f"{len(moved)} difference(s)"))
sys.exit(1 if moved else 0)
PY
