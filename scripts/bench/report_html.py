#!/usr/bin/env python3
"""Dev-time: what report.html costs and how fast it opens, on the largest real runs (BENCHMARKS.md §13).

For each run: the scoring command's wall time (median of --repeats), the time the run itself spent
on its page (SCOREKIT_PAGE_TIMINGS=1 makes a run print it on stderr: the texts read again, the item
tables, the templates filled and written, the fsync; median over the same repeats, and its share of
the run's wall time), the time `scorekit view` takes to write the same page from the finished
folder (a whole process), the sizes of items.jsonl and report.html, and in headless Chromium
(tests/browser/harness.py, network refused) the time from navigation to the first contentful paint
and to the item browser drawn (`window.scorekitReadyMs`), medians over fresh loads.

Runs:
  mint-headline   `scorekit mint --outputs mint:headline` (4,102 real trajectories)
  mint-archive    `scorekit mint --outputs ARCHIVE` with --mint-archive, a copy of the upstream
                  archive's size (scripts/bench/make_mint_archive.py: 184,590 trajectories)
  grasp-N         with --grasp-rows N, `scorekit grasp --test level2 --allow-unknown-scenes` on
                  scripts/bench/grasp_rows.py's N-row file (synthetic: the page holds its first
                  32 MiB of items and 16 MiB of responses)
  story-test-Nm   `scorekit story` on the test split (671 questions) with N models (--models,
                  default 8), model m answering question q with its option (q + m) mod 4, the
                  tiny BERT judge of the tests (scripts/same-outputs/make_inputs.py) and no
                  embedder

  build/browser-venv/bin/python scripts/bench/report_html.py [--scorekit target/release/scorekit]
      [--mint-archive /work/mint-archive/1x] [--grasp-rows 1000000] [--models 8] [--repeats 3] [--work /tmp/report-bench]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/browser"))
sys.path.insert(0, str(REPO / "scripts/same-outputs"))
from harness import Browser  # noqa: E402
import make_inputs  # noqa: E402


def timed(cmd, env):
    start = time.monotonic()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def phases(text):
    """`texts 0.1 s, table 0.2 s, ...` as {name: seconds}."""
    return {k: float(v) for k, v in (part.split()[:2] for part in text.split(","))}


def timed_run(cmd, env):
    """The command's wall time and CPU time (its children's rusage), and the seconds it says it
    spent on report.html: {"wall": {phase: s}, "cpu": {phase: s}}."""
    before = os.times()
    start = time.monotonic()
    p = subprocess.run(cmd, check=True, env={**env, "SCOREKIT_PAGE_TIMINGS": "1"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    line = [l for l in p.stderr.splitlines() if l.startswith("report.html timings:")][-1]
    wall_part, cpu_part = line.split(":", 1)[1].split("; cpu:")
    return wall, cpu, {"wall": phases(wall_part), "cpu": phases(cpu_part)}


def story_generations(dataset, models, out):
    rows = []
    for k, line in enumerate(Path(dataset).read_text().splitlines()):
        q = json.loads(line)
        for m in range(models):
            rows.append(json.dumps({"question_id": q["question_id"], "model": f"model-{m}",
                                    "ending": q["options"][(k + m) % 4]}))
    out.write_text("\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser()
    default = REPO / "target/release/scorekit"
    ap.add_argument("--scorekit", default=os.environ.get("SCOREKIT") or
                    str(default if default.exists() else REPO / "target/debug/scorekit"))
    ap.add_argument("--mint-archive")
    ap.add_argument("--grasp-rows", type=int, default=0)
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default="/tmp/report-bench")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    sk = str(Path(a.scorekit).resolve())
    env = dict(os.environ)
    env.setdefault("SCOREKIT_DATA", os.environ.get("SCOREKIT_TEST_DATA") or str(REPO / "target/test-data"))
    env["SCOREKIT_CALIBRATION_CACHE"] = str(work / "calibration-cache")

    make_inputs.OUT = work
    make_inputs.judge()
    dataset = subprocess.run([sk, "data", "path", "possible-stories:test"], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
    gens = work / f"gen-{a.models}m.jsonl"
    story_generations(dataset, a.models, gens)

    runs = [("mint-headline", ["mint", "--outputs", "mint:headline"])]
    if a.mint_archive:
        runs.append(("mint-archive", ["mint", "--outputs", a.mint_archive]))
    if a.grasp_rows:
        csv = work / f"grasp-{a.grasp_rows}.csv"
        subprocess.run([sys.executable, str(REPO / "scripts/bench/grasp_rows.py"), str(csv),
                        str(a.grasp_rows)], check=True, stdout=subprocess.DEVNULL)
        runs.append((f"grasp-{a.grasp_rows}", ["grasp", "--responses", str(csv), "--test", "level2",
                                               "--allow-unknown-scenes"]))
    runs.append((f"story-test-{a.models}m", ["story", "--dataset", "possible-stories:test",
                                             "--generations", str(gens), "--judge",
                                             str(work / "judge"), "--skip-embedder"]))
    results = []
    with Browser() as b:
        for name, args in runs:
            out = work / name
            timings = [timed_run([sk, *args, "--out", str(out), "--force", "--quiet"], env)
                       for _ in range(a.repeats)]
            run_s = [w for w, _, _ in timings]
            page = work / f"{name}.html"
            view_s = [timed([sk, "view", str(out), "--out", str(page)], env)
                      for _ in range(a.repeats)]
            assert page.read_bytes() == (out / "report.html").read_bytes(), "view = report.html"
            ready, fcp = [], []
            for _ in range(a.repeats):
                b.driver.get("about:blank")
                b.open(out / "report.html", timeout=300)
                ready.append(b.js("return window.scorekitReadyMs"))
                fcp.append(b.js("var p = performance.getEntriesByName('first-contentful-paint');"
                                " return p.length ? p[0].startTime : null"))
            assert not b.console_errors() and not b.network_requests()
            items = sum(1 for _ in open(out / "items.jsonl"))
            shown = int(b.js("return Number(document.querySelector('.browser').dataset.count)"))
            results.append({
                "run": name, "items": items, "items_in_page": shown,
                "items_jsonl_mb": (out / "items.jsonl").stat().st_size / 1e6,
                "report_html_mb": (out / "report.html").stat().st_size / 1e6,
                "run_s": statistics.median(run_s), "html_s": statistics.median(view_s),
                "run_cpu_s": statistics.median(c for _, c, _ in timings),
                "page_in_run_s": statistics.median(p["wall"]["total"] for _, _, p in timings),
                "page_share": statistics.median(p["wall"]["total"] / w for w, _, p in timings),
                "page_cpu_s": statistics.median(p["cpu"]["total"] for _, _, p in timings),
                "page_cpu_share": statistics.median(p["cpu"]["total"] / c for _, c, p in timings),
                "page_phases": {k: statistics.median(p["wall"][k] for _, _, p in timings)
                                for k in ("texts", "table", "render", "sync")},
                "fcp_ms": statistics.median(x for x in fcp if x is not None) if any(fcp) else None,
                "ready_ms": statistics.median(ready),
            })
            print(json.dumps(results[-1]), flush=True)
    print("\n| run | items (in the page) | items.jsonl | report.html | the run | its page (texts + table + render + sync) | share | CPU: run, page, share | `view` | first paint | items drawn |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ph = r["page_phases"]
        print(f"| {r['run']} | {r['items']:,} ({r['items_in_page']:,}) | {r['items_jsonl_mb']:.1f} MB "
              f"| {r['report_html_mb']:.1f} MB | {r['run_s']:.2f} s | {r['page_in_run_s']:.2f} s "
              f"({ph['texts']:.2f} + {ph['table']:.2f} + {ph['render']:.2f} + {ph['sync']:.2f}) "
              f"| {100 * r['page_share']:.0f} % | {r['run_cpu_s']:.2f} s, {r['page_cpu_s']:.2f} s, "
              f"{100 * r['page_cpu_share']:.0f} % | {r['html_s']:.2f} s | {r['fcp_ms']:.0f} ms | {r['ready_ms']:.0f} ms |")


if __name__ == "__main__":
    main()
