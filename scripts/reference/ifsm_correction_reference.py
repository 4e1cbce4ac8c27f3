#!/usr/bin/env python3
"""Independent reference values for the judge-corrected IFSM (crates/suites/src/ifsm_correction.rs).

Dev-time only, pure Python (no scipy, no numpy). A transcription of Lee et al. 2025, "How to
Correctly Report LLM-as-a-Judge Evaluations" (arXiv 2511.21140): the point estimate, the
adjusted interval (their `confidence_interval`, z = Phi^-1(0.975)), the judge's resolution
J = q0 + q1 - 1 with its Agresti-Caffo interval (uninformative when it reaches 0), and the
corrected paired difference dp / J of `scorekit compare` (delta method, Agresti-Min smoothing of
the paired difference, docs/compare.md).

z is computed here to 60 digits (Newton on an erf series in `decimal`) and rounded once, then
checked against statistics.NormalDist().inv_cdf(0.975) (Wichura's AS241, a couple of ulps off).

Writes tests/data/story/ifsm_correction_reference.json: a grid of (p, n, q0, m0, q1, m1) built
from counts (q0*m0, q1*m1 and p*n are integers), edges included (p = 0 and 1, q0/q1 = 0 and 1,
J near 0 and negative, n = 1, m = 1, large n), and a grid of paired differences.

Run from the repository root:  python3 scripts/reference/ifsm_correction_reference.py --write
    (without --write it prints a summary and writes nothing)
    --coverage   instead, print Monte Carlo coverage checks (writes nothing): both intervals on
                 independent calibrations, and Lee et al.'s on the dataset calibration's real
                 design (calibration drawn on the scored questions, with a per-question effect).
"""

import json
import math
import random
import sys
from decimal import Decimal, getcontext
from pathlib import Path
from statistics import NormalDist

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "story" / "ifsm_correction_reference.json"


def z975():
    """Phi^-1(0.975) to 60 digits, rounded once to a double."""
    getcontext().prec = 70
    pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640")

    def erf(x):
        # 2/sqrt(pi) * sum (-1)^k x^(2k+1) / (k! (2k+1)); converges fast for x ~ 1.4.
        total, term, k = Decimal(0), x, 0
        while True:
            t = term / (2 * k + 1)
            total += t
            if abs(t) < Decimal(10) ** -65:
                break
            k += 1
            term = -term * x * x / k
        return 2 * total / pi.sqrt()

    x = Decimal("1.96")
    for _ in range(10):
        f = (1 + erf(x / Decimal(2).sqrt())) / 2 - Decimal("0.975")
        density = (-(x * x) / 2).exp() / (2 * pi).sqrt()
        x -= f / density
    return float(x)


Z = z975()
assert abs(Z - NormalDist().inv_cdf(0.975)) < 1e-15, (Z, NormalDist().inv_cdf(0.975))
assert Z == 1.9599639845400543, repr(Z)


def clip(x, lo, hi):
    return float(max(lo, min(hi, x)))


def resolution(k0, m0, k1, m1):
    """J unsmoothed; its interval Agresti-Caffo (one success and one failure added a side)."""
    if m0 == 0 or m1 == 0:
        return None
    q0, q1 = k0 / m0, k1 / m1
    j = q0 + q1 - 1
    s0, s1 = (k0 + 1) / (m0 + 2), (k1 + 1) / (m1 + 2)
    centre = s0 + s1 - 1
    se = math.sqrt(s0 * (1 - s0) / (m0 + 2) + s1 * (1 - s1) / (m1 + 2))
    lo, hi = centre - Z * se, centre + Z * se
    return {"J": j, "J_ci": [lo, hi], "informative": lo > 0, "q0": q0, "q1": q1, "m0": m0, "m1": m1}


def lee_interval(p, n, k0, m0, k1, m1):
    """Lee et al.'s confidence_interval, step by step; None when the smoothed J <= 0."""
    z2 = Z * Z
    pt = (n * p + z2 / 2) / (n + z2)
    q0t = (m0 * (k0 / m0) + 1) / (m0 + 2)
    q1t = (m1 * (k1 / m1) + 1) / (m1 + 2)
    nt, m0t, m1t = n + z2, m0 + 2, m1 + 2
    jt = q0t + q1t - 1
    if jt <= 0:
        return None
    th = (pt + q0t - 1) / jt
    d = 2 * z2 * (-(1 - th) * q0t * (1 - q0t) / m0t + th * q1t * (1 - q1t) / m1t)
    se = math.sqrt(pt * (1 - pt) / nt + (1 - th) ** 2 * q0t * (1 - q0t) / m0t
                   + th ** 2 * q1t * (1 - q1t) / m1t) / jt
    return [clip(th + d - Z * se, 0, 1), clip(th + d + Z * se, 0, 1)]


def correct(p, n, k0, m0, k1, m1):
    r = resolution(k0, m0, k1, m1)
    if r is None or n == 0:
        return None
    out = {"value": None, "ci": None, "unclipped": None, "clipped": None, "n_judged": n,
           "n_empty": 0, "informative": r["informative"], "J": r["J"],
           "J_ci": r["J_ci"], "q0": r["q0"], "m0": m0, "q1": r["q1"], "m1": m1}
    if r["informative"]:
        theta = (p + r["q0"] - 1) / r["J"]
        out["value"] = clip(theta, 0, 1)
        out["unclipped"] = theta
        out["clipped"] = "low" if theta < 0 else ("high" if theta > 1 else None)
        out["ci"] = lee_interval(p, n, k0, m0, k1, m1)
    return out


def correct_with_empty(picks, n_judged, n_empty, k0, m0, k1, m1):
    """Over all endings, n_empty of them empty (known not to follow): the judged endings'
    estimate scaled by the judged share n_judged / n; exactly 0 when none was judged."""
    r = resolution(k0, m0, k1, m1)
    if r is None:
        return None
    if n_judged == 0:
        if n_empty == 0:
            return None
        return {"value": 0.0, "ci": [0.0, 0.0], "unclipped": 0.0, "clipped": None,
                "n_judged": 0, "n_empty": n_empty, "informative": r["informative"], "J": r["J"],
                "J_ci": r["J_ci"], "q0": r["q0"], "m0": m0, "q1": r["q1"], "m1": m1}
    out = correct(picks / n_judged, n_judged, k0, m0, k1, m1)
    share = n_judged / (n_judged + n_empty)
    out["n_empty"] = n_empty
    for key in ["value", "unclipped"]:
        if out[key] is not None:
            out[key] = share * out[key]
    if out["ci"] is not None:
        out["ci"] = [share * out["ci"][0], share * out["ci"][1]]
    return out


METHOD = "delta method: Agresti-Min paired difference over Lee et al.'s smoothed J"


def difference(b, c, n, k0, m0, k1, m1, ds=0.0):
    """b items with f_A - f_B = 1, c with -1, n paired items in all; ds = s_A - s_B, the
    difference of the two systems' judged (non-empty) shares: (dp + (q0 - 1) ds) / J."""
    r = resolution(k0, m0, k1, m1)
    if r is None or n == 0:
        return None
    out = {"value": None, "ci": None, "method": METHOD, "informative": r["informative"],
           "J": r["J"]}
    if not r["informative"]:
        return out
    out["value"] = clip(((b - c) / n + (r["q0"] - 1) * ds) / r["J"], -1, 1)
    nt = n + 2
    bt, ct = b + 0.5, c + 0.5
    dpt = (bt - ct) / nt
    var_dp = ((bt + ct) / nt - dpt ** 2) / nt
    q0t, q1t = (k0 + 1) / (m0 + 2), (k1 + 1) / (m1 + 2)
    jt = q0t + q1t - 1
    if jt > 0:
        var_q0 = q0t * (1 - q0t) / (m0 + 2)
        var_j = var_q0 + q1t * (1 - q1t) / (m1 + 2)
        dth = (dpt + (q0t - 1) * ds) / jt
        # Delta method on (dp + (q0 - 1) ds) / J: q0 is in both the numerator and J.
        se = math.sqrt(var_dp + ds ** 2 * var_q0 - 2 * dth * ds * var_q0 + dth ** 2 * var_j) / jt
        out["ci"] = [clip(dth - Z * se, -1, 1), clip(dth + Z * se, -1, 1)]
    return out


# Calibrations as (negatives_counted, m0, positives_counted, m1): every edge the brief names.
CALIBRATIONS = [
    (140, 200, 180, 200),      # a good judge
    (9, 10, 8, 10),            # small, informative
    (1, 1, 1, 1),              # m = 1, q0 = q1 = 1: J = 1 with a zero-width J interval
    (0, 1, 1, 1),              # q0 = 0, q1 = 1: J = 0
    (1, 1, 0, 1),              # q0 = 1, q1 = 0: J = 0
    (0, 5, 0, 5),              # q0 = q1 = 0: J = -1
    (25, 50, 26, 50),          # J = 0.02, uninformative
    (60, 100, 45, 100),        # J = 0.05 ... still uninformative at this size
    (5200, 10000, 5000, 10000),  # J = 0.02 on a large calibration: informative
    (30, 100, 40, 100),        # J negative
    (2, 2, 10000, 1000000),    # q0 = 1 on 2, q1 = 0.01: J > 0 informative, smoothed J < 0
    (50, 50, 70, 100),         # q0 = 1, q1 = 0.7
    (30, 40, 60, 60),          # q1 = 1
    (7, 10, 3, 3),             # small m1
    (0, 0, 5, 10),             # no negatives: no calibration
    (5, 10, 0, 0),             # no positives
]

# Raw rates as (picks, n).
RATES = [(0, 1), (1, 1), (0, 120), (37, 120), (120, 120), (61, 200), (1, 7),
         (312345, 1000000), (999999, 1000000), (0, 1000000)]


def counts(k0, m0, k1, m1):
    return {"positives": m1, "positives_counted": k1, "negatives": m0, "negatives_counted": k0}


def calibrations():
    return [{"counts": counts(*c), "resolution": resolution(*c)} for c in CALIBRATIONS]


def cases():
    out = []
    for i, (k0, m0, k1, m1) in enumerate(CALIBRATIONS):
        for k, n in RATES:
            p = k / n
            out.append({"cal": i, "p": p, "n": n, "correct": correct(p, n, k0, m0, k1, m1)})
        out.append({"cal": i, "p": 0.5, "n": 0, "correct": None})
    return out


# Paired differences as (b, c, n).
PAIRS = [(0, 0, 1), (1, 0, 1), (0, 1, 1), (0, 0, 50), (12, 5, 60), (5, 12, 60), (30, 0, 30),
         (0, 30, 30), (100, 98, 586), (4000, 3000, 100000), (3, 3, 10)]


# Judged endings and empty ones as (picks, n_judged, n_empty): 0%, 10% and 100% empty.
EMPTY = [(61, 200, 0), (61, 180, 20), (0, 0, 50), (150, 180, 20), (5, 90, 10), (0, 0, 0)]


def empty_cases():
    out = []
    for i, (k0, m0, k1, m1) in enumerate(CALIBRATIONS):
        for picks, nj, ne in EMPTY:
            out.append({"cal": i, "picks": picks, "n_judged": nj, "n_empty": ne,
                        "correct": correct_with_empty(picks, nj, ne, k0, m0, k1, m1)})
    return out


def difference_cases():
    out = []
    for i, (k0, m0, k1, m1) in enumerate(CALIBRATIONS):
        for b, c, n in PAIRS:
            out.append({"cal": i, "b": b, "c": c, "n": n,
                        "difference": difference(b, c, n, k0, m0, k1, m1)})
        # Judged shares that differ (empty endings in one system): 0.1 and -0.25.
        for b, c, n, ds in [(12, 5, 60, 0.1), (5, 12, 60, -0.25), (100, 98, 586, 0.1)]:
            out.append({"cal": i, "b": b, "c": c, "n": n, "judged_share_diff": ds,
                        "difference": difference(b, c, n, k0, m0, k1, m1, ds)})
    return out


def coverage(trials=2000, seed=7):
    """Share of intervals holding the truth: Lee et al.'s and the difference's (printed only)."""
    rng = random.Random(seed)

    def binom(m, q):
        return sum(rng.random() < q for _ in range(m))

    settings = [(0.4, 0.85, 0.75, 300, 100, 100), (0.6, 0.9, 0.8, 500, 200, 200),
                (0.3, 0.95, 0.7, 1000, 50, 50), (0.5, 0.75, 0.7, 200, 20, 20)]
    for th, q0, q1, n, m0, m1 in settings:
        hits = tried = 0
        for _ in range(trials):
            k0, k1 = binom(m0, q0), binom(m1, q1)
            p = sum(rng.random() < (q1 if rng.random() < th else 1 - q0) for _ in range(n)) / n
            c = correct(p, n, k0, m0, k1, m1)
            if c and c["ci"]:
                tried += 1
                hits += c["ci"][0] <= th <= c["ci"][1]
        print(f"single  theta={th} q0={q0} q1={q1} n={n} m={m0},{m1}: {hits / tried:.3f} of {tried}")
    # Two systems on the same items: B keeps A's outcome on an item, except on a share `swap`
    # of items where it follows with its own rate th_b; the estimand is the population
    # difference swap * (th_a - th_b).
    for th_a, th_b, swap, q0, q1, n, m0, m1 in [(0.5, 0.3, 0.4, 0.85, 0.75, 300, 100, 100),
                                                (0.6, 0.6, 0.5, 0.9, 0.8, 500, 60, 60),
                                                (0.4, 0.9, 0.3, 0.95, 0.9, 1000, 200, 200),
                                                (0.5, 0.3, 0.5, 0.75, 0.7, 300, 30, 30)]:
        truth = swap * (th_a - th_b)
        hits = tried = 0
        for _ in range(trials):
            k0, k1 = binom(m0, q0), binom(m1, q1)
            b = c = 0
            for _ in range(n):
                fa = rng.random() < th_a
                fb = (rng.random() < th_b) if rng.random() < swap else fa
                va = rng.random() < (q1 if fa else 1 - q0)
                vb = rng.random() < (q1 if fb else 1 - q0)
                b += va and not vb
                c += vb and not va
            d = difference(b, c, n, k0, m0, k1, m1)
            if d and d["ci"]:
                tried += 1
                hits += d["ci"][0] <= truth <= d["ci"][1]
        print(f"paired  truth={truth:+.2f} q0={q0} q1={q1} n={n} m={m0},{m1}: "
              f"{hits / tried:.3f} of {tried}")


def shared_coverage(trials=1000, seed=11):
    """The dataset calibration's real design: it frames the very questions that are scored. Each
    question i has an effect u_i ~ N(0, sd) on the judge's logit (a hard question lowers both its
    sensitivity and its specificity there), the calibration has one positive and `neg` negatives
    per scored question, and the model's ending to question i follows with probability theta.
    The estimand is theta; printed: the share of Lee et al.'s intervals holding it."""
    rng = random.Random(seed)

    def sig(x):
        return 1 / (1 + math.exp(-x))

    def logit(q):
        return math.log(q / (1 - q))

    for th, q0, q1, n, neg, sd in [(0.5, 0.75, 0.7, 458, 1, 1.0), (0.4, 0.85, 0.75, 458, 3, 1.0),
                                   (0.6, 0.9, 0.8, 300, 1, 0.5), (0.3, 0.7, 0.8, 458, 3, 1.5)]:
        hits = tried = 0
        for _ in range(trials):
            k0 = k1 = picks = 0
            for _ in range(n):
                u = rng.gauss(0, sd)
                q1i, q0i = sig(logit(q1) + u), sig(logit(q0) + u)
                k1 += rng.random() < q1i
                k0 += sum(rng.random() < q0i for _ in range(neg))
                follows = rng.random() < th
                picks += rng.random() < (q1i if follows else 1 - q0i)
            c = correct(picks / n, n, k0, n * neg, k1, n)
            if c and c["ci"]:
                tried += 1
                # The calibration's q are the question-averaged rates, as the model endings see.
                hits += c["ci"][0] <= th <= c["ci"][1]
        print(f"shared questions theta={th} q0={q0} q1={q1} n={n} negatives/question={neg} "
              f"effect sd={sd}: {hits / tried:.3f} of {tried}")


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true",
                        help=f"write {OUT.relative_to(ROOT)} (without it nothing is written)")
    parser.add_argument("--coverage", action="store_true",
                        help="print Monte Carlo coverage checks instead (writes nothing)")
    args = parser.parse_args()
    if args.coverage:
        coverage()
        shared_coverage()
        return
    doc = {
        "about": "scripts/reference/ifsm_correction_reference.py (pure Python transcription of "
                 "Lee et al. 2025, arXiv 2511.21140, and of the corrected paired difference)",
        "z": Z,
        "calibrations": calibrations(),
        "cases": cases(),
        "differences": difference_cases(),
        "empty": empty_cases(),
    }
    if not args.write:
        print(f"{len(doc['cases'])} cases, {len(doc['empty'])} with empty endings, "
              f"{len(doc['differences'])} differences; pass --write to write {OUT.relative_to(ROOT)}")
        return
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # One case a line: reviewable in a diff without a 150 kB pretty-print.
    lines = ["{", f' "about": {json.dumps(doc["about"])},', f' "z": {json.dumps(Z)},']
    for key in ["calibrations", "cases", "differences", "empty"]:
        rows = ",\n".join("  " + json.dumps(c) for c in doc[key])
        lines.append(f' "{key}": [\n{rows}\n ]' + ("," if key != "empty" else ""))
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    json.loads(OUT.read_text())
    print(f"wrote {OUT.relative_to(ROOT)}: {len(doc['calibrations'])} calibrations, "
          f"{len(doc['cases'])} cases, "
          f"{len(doc['differences'])} differences")


if __name__ == "__main__":
    main()
