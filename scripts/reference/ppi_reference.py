#!/usr/bin/env python3
"""Reference values from PUBLIC implementations: ppi-python (PPI++ mean), scipy (Fisher exact),
statsmodels (Cohen's and Fleiss' kappa). Dev-time only; the Rust unit tests compare to them at 1e-9.

Setup (a venv outside the repository):
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install ppi-python==0.2.3 scipy statsmodels numpy
Run from the repository root:
    /tmp/refvenv/bin/python scripts/reference/ppi_reference.py           # summary + checks, writes nothing
    /tmp/refvenv/bin/python scripts/reference/ppi_reference.py --write   # also writes the fixture
Writes tests/data/story/ppi_reference.json (only with --write). Generated with ppi-python 0.2.3,
scipy 1.17.1, statsmodels 0.15.0, numpy 2.4.6 (the fixture's "provenance" says what was used).

=== What ppi-python 0.2.3 computes (ppi_py/ppi.py), 1-D mean, weights None, lam=None ===
Inputs Y (n labelled gold values), Yhat (n judge values on the same items), U = Yhat_unlabeled
(N judge values). All reshaped to (k, 1) float columns; weights w = 1 (see note W).

ppi_mean_pointestimate(Y, Yhat, U, lam) with a number lam:
    theta(lam) = mean(lam * U) + mean(Y - lam * Yhat)
    (literally (w_u * lam * U).mean(0) + (w * (Y - lam * Yhat)).mean(0); numpy's mean is a
    pairwise sum divided by the count; lam multiplies each element BEFORE the mean, it is not
    lam * mean(U) - equal to ~1 ulp only).

Power tuning (lam=None), as ppi_mean_ci does it:
    theta1 = theta(1) = mean(U) + mean(Y - Yhat)                         (ppi_mean_pointestimate lam=1)
    g_i = Y_i - theta1, h_i = Yhat_i - theta1 (i < n), u_j = U_j - theta1  ("grads")
    _calc_lam_glm(g, h, u, inv_hessian=I_1, coord=None, clip=True, optim_mode="overall"):
      gc = g - mean(g); hc = h - mean(h)
      cov  = (1/n) * (gc.hc + hc.gc)            = 2 * (1/n) * sum_i gc_i hc_i    (divisor n, ddof=0)
      var  = np.cov(concat(h, u))                = sum_k (x_k - xbar)^2 / (n + N - 1)  (ddof=1, pooled
             over the n labelled AND the N unlabelled judge values, centred on their joint mean)
      num  = cov;  denom = 2 * (1 + n/N) * var   (n/N is Python int/int true division)
      lam  = num / denom;  lam = clip(lam, 0, 1)   (np.clip; NaN stays NaN)
    Algebraically lam = Cov_n(Y, Yhat) / ((1 + n/N) * Var_{n+N-1}(Yhat ++ U)); theta1 cancels.
    ppi_mean_pointestimate(lam=None) tunes the same way but its theta1 is computed as
    mean(U) + mean(Y - Yhat) without the lam factor: identical for lam = 1 (1 * x == x).
    Then it recurses with that lam: value = theta(lam).

ppi_mean_ci(Y, Yhat, U, alpha, lam) (two-sided):
    est  = theta(lam)
    se_u = std(lam * U, ddof=0) / sqrt(N)        (np.std: sqrt(mean(|x - mean(x)|^2)), divisor N)
    se_r = std(Y - lam * Yhat, ddof=0) / sqrt(n) (divisor n)
    se   = sqrt(se_u**2 + se_r**2)
    statsmodels _zconfint_generic(est, se, alpha, "two-sided"):
      z = scipy.stats.norm.ppf(1 - alpha / 2.0)  (alpha=0.05: 1.959963984540054, the exact
          Phi^-1(0.975) rounds to 1.9599639845400543, |diff| 4.4e-16)
      lo = est - z * se;  hi = est + z * se
    Note: ppi-python's own default alpha is 0.1; this fixture uses alpha=0.05 throughout.
Note W: in the lam=None branch ppi_mean_ci re-passes the (n,1) ones vector as weights, which
    construct_weight_vector rescales as w / w.sum() * n - e.g. 1/49*49 = 0.9999999999999999 -
    so the recursive call may carry 1-ulp weights. Irrelevant at 1e-9.

Degenerate cases (run with ppi-python 0.2.3, numpy 2.4.6; warnings are silenced inside ppi_py):
  (a) all Yhat and U identical (e.g. all 1), lam=None: num = 0, denom = 0, numpy scalar 0/0 -> lam = nan
      (RuntimeWarning "invalid value encountered in scalar divide", no exception); np.clip keeps
      nan, so ppi_mean_pointestimate -> array([nan]) and ppi_mean_ci -> (array([nan]), array([nan])).
      With a fixed lam the same data are fine (e.g. Y=[1,0,1,1], Yhat=[1,1,1,1], U=[1,1,1], lam=1:
      value 0.75, ci [0.32565535.., 1.17434465..]). If Yhat is constant but U is not, denom > 0 and
      lam = 0 (not degenerate).
  (b) N = 0, lam=None: ZeroDivisionError ("division by zero") from n/N in _calc_lam_glm (Python
      ints) - raised by both functions (mean of the empty U is nan first, with a warning).
      N = 0 with a fixed lam (0, 0.37, 1): point estimate array([nan]) (mean of empty slice),
      ci (array([nan]), array([nan])) - no exception. (N = 1 is fine: se_u = 0.)
  (c) n = 1, lam=None: gc = hc = 0, so num = 0 and (if the pooled judge values vary) lam = 0:
      value = Y_1, ci = [Y_1, Y_1] (se_r = std of one value = 0, se_u = 0 as lam = 0), e.g. Y=[1],
      Yhat=[1], U=[0,1,1,0] -> 1.0, (1.0, 1.0). With a fixed lam, se_r = 0 and the interval is
      est +- z * lam * std(U)/sqrt(N): Y=[1], Yhat=[1], U=[0,1,1,0], lam=1 -> 0.5,
      (0.010009.., 0.989991..). If in addition all judge values are equal: (a), nan.
None of these is in the fixture (all its values are finite).

=== Other references ===
scipy.stats.fisher_exact(table, alternative="two-sided") (scipy 1.17.1, _stats_py.py), 2x2:
  if a row or column sums to 0 -> (statistic nan, pvalue 1.0)  ([[0,0],[0,0]] gives p = 1.0).
  n1 = a+b, n2 = c+d, n = a+c (hypergeom(M=n1+n2, n=n1, N=n); pmf/cdf/sf are Boost's);
  mode = int((n+1)*(n1+1)/(n1+n2+2)); pexact = pmf(a); pmode = pmf(mode); eps = 1e-14; gamma = 1+eps
  if |pexact - pmode| / max(pexact, pmode) <= eps: p = 1.0
  elif a < mode: plower = cdf(a); if pmf(n) > pexact*gamma: p = plower
        else: guess = _binary_search(lambda x: -pmf(x), -pexact*gamma, mode, n) (scipy's
              _binary_search_for_binom_tst: returns i with a(i) <= d < a(i+1)), i.e. the last x
              >= mode with pmf(x) >= pexact*gamma;  p = plower + sf(guess)  (sf(g) = P(X > g))
  else: pupper = sf(a-1); if pmf(0) > pexact*gamma: p = pupper
        else: guess = _binary_search(pmf, pexact*gamma, 0, mode): the last x <= mode with
              pmf(x) <= pexact*gamma;  p = pupper + cdf(guess)
  p = min(p, 1.0).  So "as or more extreme" = pmf(x) <= pexact * (1 + 1e-14) (relative 1e-14;
  the far side's tail takes pmf < pexact*gamma when a < mode and pmf <= pexact*gamma when a >= mode;
  a tie at exactly pexact*gamma does not occur in practice).
  The tail sums are Boost cdf/sf values, not sums of the individual pmf values.
statsmodels.stats.inter_rater.cohens_kappa(table) (simple kappa), table[i][j] = #(a=i, b=j):
  po = trace(T)/nobs; pe = sum_k (colsum_k/nobs) * (rowsum_k/nobs); kappa = (po - pe) / (1 - pe).
fleiss_kappa(counts, method="fleiss"): m raters per item (row sums), N items, n_total = N*m;
  p_j = colsum_j / n_total; P_i = (sum_j c_ij^2 - m) / (m*(m-1)); Pbar = mean(P_i);
  Pe = sum_j p_j^2; kappa = (Pbar - Pe) / (1 - Pe).
Degenerate: both raters all-yes (cohens_kappa([[0,0],[0,8]])) -> nan (0/0, pe = 1); Fleiss with
every rating in one category ([[0,3],[0,3]]) -> nan. One rater all-yes, the other mixed, is
finite: pe = po -> kappa 0.0 (case "b_all_yes"). Not in the fixture: the nan cases.
Checks run on every invocation: each PPI value is re-derived by a pure-Python transcription of the
formulas above (math.fsum, NormalDist z) to 1e-12; each Fisher p against the exact rational sum
over tables with P <= P(observed) to 1e-12 relative; each kappa against the textbook formula.
Fixture extras beyond the brief: ppi cases carry "lambda_unclipped" (_calc_lam_glm clip=False;
equals "lambda" for a fixed lam); kappa cases carry "name" (and Fleiss "raters").

=== Worked example (printed by the script) ===
Y = [1, 0, 1, 1, 0], Yhat = [1, 0, 0, 1, 1], U = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1]  (n = 5, N = 10)
theta1 = mean(U) + mean(Y - Yhat) = 0.6 + 0.0 = 0.6
Cov_n(Y, Yhat) = (1/5) * sum (Y-0.6)(Yhat-0.6) = 0.04; pooled Yhat++U: 9 ones of 15,
  Var_ddof1 = 15 * 0.6 * 0.4 / 14 = 0.2571428..; num = 2 * 0.04 = 0.08,
  denom = 2 * (1 + 5/10) * 0.2571428.. = 0.7714285..; lambda = num/denom = 0.10370370370370376
value = mean(lam*U) + mean(Y - lam*Yhat) = 0.6000000000000001
se_u = std0(lam*U)/sqrt(10) = 0.016065708695378923, se_r = std0(Y - lam*Yhat)/sqrt(5) = 0.2164646731744242
z = norm.ppf(0.975) = 1.959963984540054
ci (alpha=0.05) = [0.17457013566970725, 1.025429864330293]
fisher_exact([[1,9],[11,3]]).pvalue = 0.0027594561852200836
cohens_kappa([[1,0],[1,2]]) (a=[1,0,1,1], b=[1,0,0,1], T[a][b]) = 0.5
fleiss_kappa([[3,0],[2,1],[0,3]]) = 0.5499999999999998
"""

import argparse
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "story" / "ppi_reference.json"
ALPHA = 0.05


def parse_args():
    ap = argparse.ArgumentParser(
        description="Reference values from ppi-python, scipy and statsmodels "
        "(writes tests/data/story/ppi_reference.json only with --write)."
    )
    ap.add_argument("--write", action="store_true", help="write the fixture (default: print a summary only)")
    return ap.parse_args()


ARGS = parse_args()  # before the heavy imports, so --help is quick and writes nothing

import warnings  # noqa: E402
from importlib.metadata import version  # noqa: E402
from statistics import NormalDist  # noqa: E402

try:
    import numpy as np  # noqa: E402
    import scipy.stats  # noqa: E402
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate  # noqa: E402
    from ppi_py.ppi import _calc_lam_glm  # noqa: E402
    from ppi_py.utils import construct_weight_vector, reshape_to_2d  # noqa: E402
    from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa  # noqa: E402
except ImportError as e:
    sys.exit(f"{e}\nneeds: python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install "
             "ppi-python==0.2.3 scipy statsmodels numpy; then run it with /tmp/refvenv/bin/python")

warnings.simplefilter("ignore")

# --------------------------------------------------------------------------------------------
# PPI
# --------------------------------------------------------------------------------------------


def tuned_lambda(Y, Yhat, U, clip=True):
    """The lambda ppi_mean_ci computes internally for lam=None (same calls, same order)."""
    n = Y.shape[0]
    N = U.shape[0]
    d = Y.shape[1] if len(Y.shape) > 1 else 1
    Y2, Yh2, U2 = reshape_to_2d(Y), reshape_to_2d(Yhat), reshape_to_2d(U)
    w = construct_weight_vector(n, None, vectorized=True)
    wu = construct_weight_vector(N, None, vectorized=True)
    ppi_pointest = ppi_mean_pointestimate(Y2, Yh2, U2, lam=1, w=w, w_unlabeled=wu)
    grads = w * (Y2 - ppi_pointest)
    grads_hat = w * (Yh2 - ppi_pointest)
    grads_hat_unlabeled = wu * (U2 - ppi_pointest)
    lam = _calc_lam_glm(grads, grads_hat, grads_hat_unlabeled, np.eye(d), coord=None,
                        clip=clip, optim_mode="overall")
    return float(lam)


Z_PURE = NormalDist().inv_cdf(1 - ALPHA / 2)


def pure_ppi(y, yhat, u, lam):
    """Independent pure-Python transcription of the formulas in the docstring."""
    n, N = len(y), len(u)
    mean = lambda xs: math.fsum(xs) / len(xs)  # noqa: E731
    if lam is None:
        theta1 = mean(u) + mean([a - b for a, b in zip(y, yhat)])
        g = [a - theta1 for a in y]
        h = [b - theta1 for b in yhat]
        pooled = h + [c - theta1 for c in u]
        gm, hm, pm = mean(g), mean(h), mean(pooled)
        cov = (1 / n) * 2 * math.fsum((a - gm) * (b - hm) for a, b in zip(g, h))
        var = math.fsum((x - pm) ** 2 for x in pooled) / (n + N - 1)
        raw = cov / (2 * (1 + n / N) * var)
        lam = min(1.0, max(0.0, raw))
    else:
        raw = lam
    est = mean([lam * c for c in u]) + mean([a - lam * b for a, b in zip(y, yhat)])

    def std0(xs):
        m = mean(xs)
        return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / len(xs))

    se = math.sqrt((std0([lam * c for c in u]) / math.sqrt(N)) ** 2
                   + (std0([a - lam * b for a, b in zip(y, yhat)]) / math.sqrt(n)) ** 2)
    return est, (est - Z_PURE * se, est + Z_PURE * se), lam, raw


def ppi_case(name, y, yhat, u, lam):
    y, yhat, u = [int(v) for v in y], [int(v) for v in yhat], [int(v) for v in u]
    Y, Yh, U = (np.asarray(v, dtype=float) for v in (y, yhat, u))
    value = ppi_mean_pointestimate(Y, Yh, U, lam=lam)
    lo, hi = ppi_mean_ci(Y, Yh, U, alpha=ALPHA, lam=lam)
    value, lo, hi = float(np.asarray(value).ravel()[0]), float(lo[0]), float(hi[0])
    if lam is None:
        used = tuned_lambda(Y, Yh, U)
        raw = tuned_lambda(Y, Yh, U, clip=False)
        # the tuned interval is ppi_mean_ci at that lambda
        lo2, hi2 = ppi_mean_ci(Y, Yh, U, alpha=ALPHA, lam=used)
        v2 = float(ppi_mean_pointestimate(Y, Yh, U, lam=used)[0])
        assert abs(lo2[0] - lo) <= 1e-14 and abs(hi2[0] - hi) <= 1e-14 and abs(v2 - value) <= 1e-14, name
    else:
        used, raw = float(lam), float(lam)
    for x in (value, lo, hi, used):
        assert math.isfinite(x), (name, value, lo, hi, used)
    pv, (plo, phi), plam, praw = pure_ppi(y, yhat, u, lam)
    for a, b in ((pv, value), (plo, lo), (phi, hi), (plam, used), (praw, raw)):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (name, a, b)
    return {"name": name, "y": y, "yhat": yhat, "yhat_unlabeled": u, "lam": lam,
            "value": value, "ci": [lo, hi], "lambda": used, "lambda_unclipped": raw}


def judge(rng, truth, acc):
    """Judge value per item: the truth with probability acc, otherwise the other class."""
    flip = rng.random(len(truth)) >= acc
    return np.where(flip, 1 - truth, truth).astype(int)


def binary_sample(seed, n, N, p=0.5, acc=0.8, p_unl=None):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < p).astype(int)
    yhat = judge(rng, y, acc)
    yu_true = (rng.random(N) < (p if p_unl is None else p_unl)).astype(int)
    u = judge(rng, yu_true, acc)
    return y, yhat, u


def has_both(*arrays):
    allv = np.concatenate(arrays)
    return allv.min() != allv.max()


def find_seed(pred, gen, start=0, tries=10000):
    for s in range(start, start + tries):
        data = gen(s)
        if pred(s, *data):
            return s, data
    raise SystemExit("no seed found")


def raw_lam(y, yhat, u):
    return tuned_lambda(np.asarray(y, float), np.asarray(yhat, float), np.asarray(u, float), clip=False)


def ppi_cases():
    cases = []
    # informative judge (yhat = y w.p. 0.8), n=30, N=500: all four lambda settings
    y, yh, u = binary_sample(101, 30, 500)
    for lam, tag in ((None, "tuned"), (0.0, "lam0"), (1.0, "lam1"), (0.37, "lam0.37")):
        cases.append(ppi_case(f"informative_n30_N500_{tag}", y, yh, u, lam))
    # n=2, N=10 (search a seed with a finite tuned lambda and both classes present)
    s, (y, yh, u) = find_seed(lambda s, y, yh, u: has_both(yh, u) and has_both(y) and has_both(yh),
                              lambda s: binary_sample(s, 2, 10), start=200)
    cases.append(ppi_case(f"n2_N10_tuned_seed{s}", y, yh, u, None))
    cases.append(ppi_case(f"n2_N10_lam1_seed{s}", y, yh, u, 1.0))
    # n=5, N=1
    s, (y, yh, u) = find_seed(lambda s, y, yh, u: has_both(yh, u) and has_both(y),
                              lambda s: binary_sample(s, 5, 1), start=300)
    cases.append(ppi_case(f"n5_N1_tuned_seed{s}", y, yh, u, None))
    cases.append(ppi_case(f"n5_N1_lam1_seed{s}", y, yh, u, 1.0))
    cases.append(ppi_case(f"n5_N1_lam0.37_seed{s}", y, yh, u, 0.37))
    # n=200, N=3000
    y, yh, u = binary_sample(401, 200, 3000, p=0.3, acc=0.8)
    cases.append(ppi_case("informative_n200_N3000_tuned", y, yh, u, None))
    cases.append(ppi_case("informative_n200_N3000_lam0.37", y, yh, u, 0.37))
    cases.append(ppi_case("informative_n200_N3000_lam0", y, yh, u, 0.0))
    # n=200, N=10 (n/N large)
    y, yh, u = binary_sample(402, 200, 10, p=0.6, acc=0.8)
    cases.append(ppi_case("informative_n200_N10_tuned", y, yh, u, None))
    # n=2, N=3000
    s, (y, yh, u) = find_seed(lambda s, y, yh, u: has_both(y),
                              lambda s: binary_sample(s, 2, 3000), start=500)
    cases.append(ppi_case(f"n2_N3000_lam0.37_seed{s}", y, yh, u, 0.37))
    cases.append(ppi_case(f"n2_N3000_tuned_seed{s}", y, yh, u, None))
    # all agree (y == yhat, both classes), n=30, N=500
    rng = np.random.default_rng(601)
    y = (rng.random(30) < 0.5).astype(int)
    assert has_both(y)
    u = judge(rng, (rng.random(500) < 0.5).astype(int), 0.8)
    cases.append(ppi_case("all_agree_n30_N500_tuned", y, y.copy(), u, None))
    cases.append(ppi_case("all_agree_n30_N500_lam1", y, y.copy(), u, 1.0))
    # all disagree (y == 1 - yhat): tuned lambda clips at 0
    rng = np.random.default_rng(602)
    y = (rng.random(30) < 0.5).astype(int)
    assert has_both(y)
    u = judge(rng, (rng.random(500) < 0.5).astype(int), 0.8)
    c = ppi_case("all_disagree_n30_N500_tuned", y, 1 - y, u, None)
    assert c["lambda"] == 0.0 and c["lambda_unclipped"] < 0
    cases.append(c)
    cases.append(ppi_case("all_disagree_n30_N500_lam0.37", y, 1 - y, u, 0.37))
    # a random (weak) judge whose tuned lambda clips at 0: negative sample covariance
    s, (y, yh, u) = find_seed(lambda s, y, yh, u: has_both(y) and has_both(yh) and raw_lam(y, yh, u) < -0.05
                              and not np.array_equal(yh, 1 - y),
                              lambda s: binary_sample(s, 30, 500, acc=0.55), start=700)
    c = ppi_case(f"clip0_weak_judge_n30_N500_tuned_seed{s}", y, yh, u, None)
    assert c["lambda"] == 0.0
    cases.append(c)
    # a sample whose tuned lambda clips at 1: a balanced labelled sample, unlabelled judge
    # values mostly 1 (small pooled variance)
    s, (y, yh, u) = find_seed(lambda s, y, yh, u: has_both(y) and raw_lam(y, yh, u) > 1.05,
                              lambda s: binary_sample(s, 30, 500, p=0.5, acc=0.9, p_unl=0.97), start=800)
    c = ppi_case(f"clip1_skewed_unlabelled_n30_N500_tuned_seed{s}", y, yh, u, None)
    assert c["lambda"] == 1.0
    cases.append(c)
    return cases


def diff_sample(seed, n, N, acc=0.8):
    """Paired differences y_A - y_B of two systems' binary gold scores, judged per system."""
    rng = np.random.default_rng(seed)
    ya = (rng.random(n) < 0.7).astype(int)
    yb = (rng.random(n) < 0.5).astype(int)
    ja, jb = judge(rng, ya, acc), judge(rng, yb, acc)
    ua = (rng.random(N) < 0.7).astype(int)
    ub = (rng.random(N) < 0.5).astype(int)
    return ya - yb, ja - jb, judge(rng, ua, acc) - judge(rng, ub, acc)


def ppi_real_cases():
    cases = []
    y, yh, u = diff_sample(901, 30, 500)
    cases.append(ppi_case("diff_n30_N500_tuned", y, yh, u, None))
    cases.append(ppi_case("diff_n30_N500_lam1", y, yh, u, 1.0))
    cases.append(ppi_case("diff_n30_N500_lam0", y, yh, u, 0.0))
    y, yh, u = diff_sample(902, 5, 10)
    cases.append(ppi_case("diff_n5_N10_tuned", y, yh, u, None))
    y, yh, u = diff_sample(903, 200, 3000, acc=0.9)
    cases.append(ppi_case("diff_n200_N3000_tuned", y, yh, u, None))
    cases.append(ppi_case("diff_n200_N3000_lam0.37", y, yh, u, 0.37))
    for c in cases:
        assert set(c["y"]) | set(c["yhat"]) | set(c["yhat_unlabeled"]) <= {-1, 0, 1}
        assert -1 in c["y"] + c["yhat"] + c["yhat_unlabeled"]
    return cases


# --------------------------------------------------------------------------------------------
# Fisher, kappas
# --------------------------------------------------------------------------------------------

FISHER_TABLES = [
    [[0, 0], [0, 0]], [[0, 0], [3, 4]], [[4, 0], [0, 0]], [[5, 0], [0, 5]], [[0, 5], [5, 0]],
    [[1, 9], [11, 3]], [[100, 20], [30, 80]], [[500, 120], [130, 480]], [[1000, 3], [2, 0]],
    [[3, 3], [3, 3]], [[2, 5], [5, 2]], [[5, 2], [2, 5]], [[3, 1], [1, 3]], [[10, 10], [10, 10]],
    [[1, 0], [0, 1]], [[8, 2], [1, 5]], [[7, 12], [0, 1]], [[2, 7], [8, 2]], [[12, 5], [29, 2]],
    [[6, 1], [1, 6]], [[4, 4], [4, 5]], [[20, 15], [18, 30]], [[0, 1], [1, 0]], [[1, 1], [1, 1]],
]


def fisher_exact_rational(t):
    """Exact two-sided p: sum of P(x) over tables with P(x) <= P(observed), in rationals."""
    (a, b), (c, d) = t
    n1, n2, n = a + b, c + d, a + c
    M = n1 + n2
    lo, hi = max(0, n - n2), min(n, n1)
    pm = {x: Fraction(math.comb(n1, x) * math.comb(n2, n - x), math.comb(M, n)) for x in range(lo, hi + 1)}
    p0 = pm[a]
    return float(sum(p for p in pm.values() if p <= p0))


def fisher_cases():
    out = []
    for t in FISHER_TABLES:
        r = scipy.stats.fisher_exact(t, alternative="two-sided")
        p = float(r.pvalue)
        if not math.isfinite(p):
            print(f"  fisher {t}: scipy p = {p!r}, skipped")
            continue
        exact = fisher_exact_rational(t)
        assert abs(exact - p) <= 1e-12 * max(1e-300, exact) or abs(exact - p) <= 1e-15, (t, p, exact)
        out.append({"table": t, "p": p})
    return out


def confusion(a, b):
    t = [[0, 0], [0, 0]]
    for x, y in zip(a, b):
        t[x][y] += 1
    return t


def textbook_kappa(a, b):
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return (po - pe) / (1 - pe)


def cohen_cases():
    rng = np.random.default_rng(1001)
    raw = []
    a = [int(v) for v in (rng.random(20) < 0.5)]
    raw.append(("perfect", a, list(a)))
    raw.append(("chance_level", [0] * 25 + [0] * 25 + [1] * 25 + [1] * 25, [0] * 25 + [1] * 25 + [0] * 25 + [1] * 25))
    raw.append(("b_all_yes", [1, 1, 1, 0, 0, 1, 0, 1], [1] * 8))
    a = [int(v) for v in (rng.random(50) < 0.6)]
    b = [int(v) for v in judge(rng, np.array(a), 0.8)]
    raw.append(("agree80_n50", a, b))
    a = [int(v) for v in (rng.random(10) < 0.5)]
    raw.append(("total_disagreement", a, [1 - v for v in a]))
    raw.append(("small_n4", [1, 0, 1, 1], [1, 0, 0, 1]))
    a = [int(v) for v in (rng.random(300) < 0.2)]
    b = [int(v) for v in judge(rng, np.array(a), 0.9)]
    raw.append(("rare_yes_n300", a, b))
    out = []
    for name, a, b in raw:
        t = confusion(a, b)
        k = float(cohens_kappa(t, return_results=False))
        kr = float(cohens_kappa(t).kappa)
        if not math.isfinite(k):
            print(f"  cohen {name}: statsmodels kappa = {k!r}, skipped")
            continue
        tb = textbook_kappa(a, b)
        assert k == kr and abs(k - tb) <= 1e-12, (name, k, kr, tb)
        out.append({"name": name, "a": a, "b": b, "kappa": k})
    return out


def textbook_fleiss(counts):
    m = sum(counts[0])
    N = len(counts)
    P = [(sum(c * c for c in row) - m) / (m * (m - 1)) for row in counts]
    pbar = sum(P) / N
    pj = [sum(row[j] for row in counts) / (N * m) for j in range(2)]
    pe = sum(p * p for p in pj)
    return (pbar - pe) / (1 - pe)


def fleiss_cases():
    rng = np.random.default_rng(1101)

    def random_counts(items, raters, p_yes_items):
        rows = []
        for _ in range(items):
            q = p_yes_items[int(rng.integers(len(p_yes_items)))]
            yes = int((rng.random(raters) < q).sum())
            rows.append([raters - yes, yes])
        return rows

    raw = [
        ("3raters_random_mixed", random_counts(20, 3, [0.1, 0.5, 0.9])),
        ("3raters_perfect", [[3, 0], [0, 3], [3, 0], [0, 3], [0, 3]]),
        ("3raters_all_split", [[2, 1], [1, 2], [2, 1], [1, 2]]),
        ("3raters_high_agreement", random_counts(40, 3, [0.03, 0.97])),
        ("3raters_small", [[3, 0], [2, 1], [0, 3]]),
        ("4raters_random", random_counts(25, 4, [0.15, 0.85, 0.5])),
        ("4raters_small", [[4, 0], [2, 2], [1, 3], [0, 4], [3, 1]]),
    ]
    out = []
    for name, counts in raw:
        m = sum(counts[0])
        assert all(sum(r) == m for r in counts)
        k = float(fleiss_kappa(counts, method="fleiss"))
        if not math.isfinite(k):
            print(f"  fleiss {name}: statsmodels kappa = {k!r}, skipped")
            continue
        tb = textbook_fleiss(counts)
        assert abs(k - tb) <= 1e-12, (name, k, tb)
        out.append({"name": name, "raters": m, "counts": counts, "kappa": k})
    return out


# --------------------------------------------------------------------------------------------


def worked_example():
    y = [1, 0, 1, 1, 0]
    yhat = [1, 0, 0, 1, 1]
    u = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1]
    Y, Yh, U = (np.asarray(v, float) for v in (y, yhat, u))
    n, N = len(y), len(u)
    theta1 = float(ppi_mean_pointestimate(Y, Yh, U, lam=1)[0])
    lam = tuned_lambda(Y, Yh, U)
    value = float(ppi_mean_pointestimate(Y, Yh, U, lam=None)[0])
    lo, hi = ppi_mean_ci(Y, Yh, U, alpha=ALPHA, lam=None)
    se_u = float(np.std(lam * U) / np.sqrt(N))
    se_r = float(np.std(Y - lam * Yh) / np.sqrt(n))
    lines = [
        f"Y = {y}, Yhat = {yhat}, U = {u}  (n = {n}, N = {N})",
        f"theta1 = mean(U) + mean(Y - Yhat) = 0.6 + 0.0 = {theta1!r}",
        "Cov_n(Y, Yhat) = (1/5) * sum (Y-0.6)(Yhat-0.6) = 0.04; pooled Yhat++U: 9 ones of 15,",
        "  Var_ddof1 = 15 * 0.6 * 0.4 / 14 = 0.2571428..; num = 2 * 0.04 = 0.08,",
        f"  denom = 2 * (1 + 5/10) * 0.2571428.. = 0.7714285..; lambda = num/denom = {lam!r}",
        f"value = mean(lam*U) + mean(Y - lam*Yhat) = {value!r}",
        f"se_u = std0(lam*U)/sqrt(10) = {se_u!r}, se_r = std0(Y - lam*Yhat)/sqrt(5) = {se_r!r}",
        f"z = norm.ppf(0.975) = {float(scipy.stats.norm.ppf(1 - ALPHA / 2.0))!r}",
        f"ci (alpha=0.05) = [{float(lo[0])!r}, {float(hi[0])!r}]",
        f"fisher_exact([[1,9],[11,3]]).pvalue = {float(scipy.stats.fisher_exact([[1, 9], [11, 3]]).pvalue)!r}",
        f"cohens_kappa([[1,0],[1,2]]) (a=[1,0,1,1], b=[1,0,0,1], T[a][b]) = {float(cohens_kappa([[1, 0], [1, 2]], return_results=False))!r}",
        f"fleiss_kappa([[3,0],[2,1],[0,3]]) = {float(fleiss_kappa([[3, 0], [2, 1], [0, 3]]))!r}",
    ]
    return lines


def dump(doc):
    """Top level pretty, one case per line (json floats are repr-exact)."""
    parts = ["{"]
    keys = list(doc)
    for i, k in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        v = doc[k]
        if isinstance(v, list):
            parts.append(f" {json.dumps(k)}: [")
            for j, item in enumerate(v):
                c = "," if j < len(v) - 1 else ""
                parts.append("  " + json.dumps(item, allow_nan=False) + c)
            parts.append(" ]" + comma)
        else:
            parts.append(f" {json.dumps(k)}: {json.dumps(v, allow_nan=False)}{comma}")
    parts.append("}")
    return "\n".join(parts) + "\n"


REAL_INPUTS = ROOT / "tests" / "data" / "story" / "ppi_real_run_inputs.json"


def real_run_cases():
    """ppi-python on the verdicts and labels of a real story run (the tiny bert_mc judge on the dev
    split, tests/integration/calibration.rs, which writes them with SCOREKIT_WRITE_PPI_INPUTS):
    per model and the paired difference gold - wrong. Where ppi-python returns NaN (every
    prediction equal: lambda = 0/0), scorekit defines lambda = 0: the reference is then
    ppi-python at lam=0, and the case says so."""
    inputs = json.loads(REAL_INPUTS.read_text())
    out = {}
    for name, v in inputs.items():
        Y, Yh, U = (np.asarray(v[k], dtype=float) for k in ("y", "yhat", "yhat_unlabeled"))
        tuned = float(np.asarray(ppi_mean_pointestimate(Y, Yh, U, lam=None)).ravel()[0])
        lam, note = None, "ppi-python, lam=None"
        if not math.isfinite(tuned):
            lam, note = 0.0, "ppi-python returns NaN (all predictions equal); scorekit's lambda = 0: ppi-python at lam=0"
        value = float(np.asarray(ppi_mean_pointestimate(Y, Yh, U, lam=lam)).ravel()[0])
        lo, hi = ppi_mean_ci(Y, Yh, U, alpha=ALPHA, lam=lam)
        used = tuned_lambda(Y, Yh, U) if lam is None else lam
        out[name] = {"reference": note, "y": v["y"], "yhat": v["yhat"],
                     "yhat_unlabeled": v["yhat_unlabeled"], "value": value,
                     "ci": [float(lo[0]), float(hi[0])], "lambda": float(used)}
    return out


def main():
    provenance = (f"ppi-python {version('ppi-python')}, scipy {version('scipy')}, "
                  f"statsmodels {version('statsmodels')}, numpy {version('numpy')}; "
                  "scripts/reference/ppi_reference.py")
    doc = {
        "provenance": provenance,
        "alpha": ALPHA,
        "ppi_mean": ppi_cases(),
        "ppi_mean_real_valued": ppi_real_cases(),
        "fisher": fisher_cases(),
        "cohen_kappa": cohen_cases(),
        "fleiss_kappa": fleiss_cases(),
        "real_runs": real_run_cases(),
    }
    print(provenance)
    print("worked example:")
    for line in worked_example():
        print("  " + line)
    for key in ("ppi_mean", "ppi_mean_real_valued"):
        print(f"{key}: {len(doc[key])} cases")
        for c in doc[key]:
            lam = "None" if c["lam"] is None else c["lam"]
            print(f"  {c['name']:<48} n={len(c['y']):<4} N={len(c['yhat_unlabeled']):<5} lam={lam!s:<5} "
                  f"lambda={c['lambda']:.6f} (raw {c['lambda_unclipped']:.4f}) value={c['value']:.6f} "
                  f"ci=[{c['ci'][0]:.6f}, {c['ci'][1]:.6f}]")
    print(f"fisher: {len(doc['fisher'])} tables")
    for c in doc["fisher"]:
        print(f"  {c['table']}  p={c['p']!r}")
    print(f"cohen_kappa: {len(doc['cohen_kappa'])} cases")
    for c in doc["cohen_kappa"]:
        print(f"  {c['name']:<20} n={len(c['a']):<4} table={confusion(c['a'], c['b'])} kappa={c['kappa']!r}")
    print(f"fleiss_kappa: {len(doc['fleiss_kappa'])} cases")
    for c in doc["fleiss_kappa"]:
        print(f"  {c['name']:<24} raters={c['raters']} items={len(c['counts'])} kappa={c['kappa']!r}")
    for name, c in doc["real_runs"].items():
        print(f"  real run {name:<8} n={len(c['y'])} N={len(c['yhat_unlabeled'])} lambda={c['lambda']:.6f} "
              f"value={c['value']:.6f} ci=[{c['ci'][0]:.6f}, {c['ci'][1]:.6f}] ({c['reference']})")
    print("all cross-checks passed (pure-Python transcriptions, exact rational Fisher, textbook kappas)")
    if ARGS.write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(dump(doc))
        print(f"wrote {OUT.relative_to(ROOT)}")
    else:
        print("(nothing written; pass --write to write " + str(OUT.relative_to(ROOT)) + ")")


if __name__ == "__main__":
    sys.exit(main())
