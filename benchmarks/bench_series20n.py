"""Issue 20 round 14: ``stability_`` of a series, claimed against actual, per scoring rule.

Two data sets per tag, each fitted with the defaults (``SPCATV(k, operator=op,
random_state=0)``); the actual reproducibility of a component is its matched
absolute correlation with the other data set's fit. For each fit, pairs of
cold fits at its chosen point on halves of its rows are recorded (``--out``,
one ``.npz`` per tag), each scored per component with
``_stability.component_stability``:

- ``b10:s`` halves of 10 contiguous blocks (``series_halves`` seed ``s``,
  0-7; the mean of seeds 0-2 is main's ``stability_``, Spearman-Brown of the
  median of seeds 0-5 this round's), ``b10g:s`` the same with the rows
  within ``GAP / 2`` of a boundary between the two halves dropped;
- ``b4:j`` the 3 splits of 4 blocks into 2 + 2 (``b4:1``: first / second half);
- ``sub:s`` two subsamples of 9 of 10 contiguous blocks sharing 8
  (``overlapping_subsamples``), corrected for the overlap.

Data: ``rsfmri`` (brainspace's run, z-scored vertices) cut into contiguous
halves; ``rsshuf:SEED`` its rows in random order (seeded), cut into halves
(each half's rows are recovered in order by ``series_order`` before the
blocks are cut); ``ar-PHI:SEED`` / ``nonstat-PHI:SEED`` simulated series
(:func:`simulate`). ``--summary DIR`` prints the scoring rules side by side.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_series20n.py \\
        rsfmri:0 ar-0.9:3481 --out /tmp/s20n
    python benchmarks/bench_series20n.py --summary /tmp/s20n
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.ndimage import gaussian_filter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurospca import SPCATV, tv_from_mask  # noqa: E402
from neurospca.decomposition import _stability as S  # noqa: E402

GAP = 6
SHAPE = (40, 40)


def simulate(phi, seed, n=600, transient=False):
    """A series of ``n`` rows on a 40 x 40 grid: three blobs with AR(1) time
    courses (coefficient ``phi``, amplitudes 1.0 / 0.6 / 0.35 of the noise)
    plus spatially smooth AR(1) noise; ``transient``: the third blob (0.8)
    only in the first quarter of the rows. Returns X, operator, patterns (3, 1600)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[: SHAPE[0], : SHAPE[1]]
    centres, pats = [(10, 10), (28, 14), (16, 30)], []
    for cy, cx in centres:
        pats.append(np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 4.0**2)).ravel())
    amp = [1.0, 0.6, 0.8 if transient else 0.35]
    P = np.array(pats) * np.array(amp)[:, None]

    def ar(shape):
        e = rng.standard_normal(shape)
        out = np.empty(shape)
        out[0] = e[0]
        for t in range(1, shape[0]):
            out[t] = phi * out[t - 1] + np.sqrt(1 - phi**2) * e[t]
        return out

    T = ar((n, 3))
    if transient:
        T[n // 4 :, 2] = 0.0
    noise = ar((n, SHAPE[0] * SHAPE[1])).reshape(n, *SHAPE)
    noise = gaussian_filter(noise, (0, 1.5, 1.5)).reshape(n, -1)
    noise /= noise.std()
    X = 3.0 * T @ P + noise
    return X, tv_from_mask(np.ones(SHAPE, dtype=bool)), np.array(pats)


def data_pair(tag):
    """(XA, XB, op, patterns or None)."""
    name, seed = tag.split(":")
    seed = int(seed)
    if name in ("rsfmri", "rsshuf"):
        from tests._instances import brainspace_rsfmri

        X, op, _ = brainspace_rsfmri()
        X = (X - X.mean(0)) / X.std(0)
        h = len(X) // 2
        rows = np.arange(2 * h)
        if name == "rsshuf":
            rows = np.random.default_rng(seed).permutation(len(X))[: 2 * h]
        return X[rows[:h]], X[rows[h:]], op, None
    kind, _, phi = name.partition("-")
    X, op, pats = simulate(float(phi or 0.9), seed, transient=kind == "nonstat")
    h = len(X) // 2
    return X[:h], X[h:], op, pats


def block_rows(n, n_blocks, part_a, gap=0):
    """Rows of the two halves: blocks ``part_a`` and the others; ``gap`` rows
    around each boundary between the halves dropped."""
    blocks = np.array_split(np.arange(n), n_blocks)
    side = np.isin(np.arange(n_blocks), part_a)
    label = np.concatenate([np.full(len(b), s) for b, s in zip(blocks, side, strict=True)])
    keep = np.ones(n, bool)
    for i in range(1, n_blocks):
        if side[i] != side[i - 1]:
            b = blocks[i][0]
            keep[max(b - gap // 2, 0) : b + gap - gap // 2] = False
    return np.flatnonzero(keep & label), np.flatnonzero(keep & ~label)


def splits():
    """(name, n_blocks, blocks of half A, gap)."""
    out = []
    for s in range(8):
        order = np.random.RandomState(s).permutation(10)  # series_halves' draw
        out.append((f"b10:{s}", 10, order[:5], 0))
        if s < 4:
            out.append((f"b10g:{s}", 10, order[:5], GAP))
    out += [(f"b4:{j}", 4, [0, j], 0) for j in (1, 2, 3)]  # b4:1 = first / second half
    return out + [(f"sub:{s}", None, s, 0) for s in range(3)]


def score_fit(est, X, rec, key, names=None):
    """Every split's pair of cold fits at ``est``'s chosen point, scored;
    ``sub:s``: two overlapping subsamples of 9 of 10 contiguous blocks
    (``overlapping_subsamples``, seed ``s``), corrected for the overlap."""
    params = S._chosen_params(est)
    for name, nb, part, gap in splits():
        if names is not None and name.split(":")[0] not in names:
            continue
        shared = None
        if nb is None:
            a, b, shared = S.overlapping_subsamples(len(X), part)
        else:
            a, b = block_rows(len(X), nb, part, gap)
        c0 = time.process_time()
        comps = S._fit_point(S._half_models(est), (X[a], X[b]), params)["components"]
        stab = S.component_stability(est.components_, *comps)
        rec[f"{key}|{name}"] = stab if shared is None else S.overlap_corrected(stab, shared)
        rec[f"{key}|cpu|{name}"] = time.process_time() - c0


def run(tag, out, plain=False):
    XA, XB, op, pats = data_pair(tag)
    k = 5
    rec, models = {}, []
    floor = S.below_noise
    for key, X in (("A", XA), ("B", XB)):
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = SPCATV(k, operator=op, random_state=0).fit(X)
        rec[f"{key}|cpu_fit"] = time.process_time() - c0
        rec[f"{key}|claimed"] = m.stability_
        rec[f"{key}|chosen"] = [m.l1_ratio_, m.tv_ratio_, m.alpha_rel_]
        rec[f"{key}|C"] = m.components_
        rec[f"{key}|floor"] = floor(m, np.asarray(X), S._chosen_params(m))
        rec[f"{key}|serial"] = S.serial_correlation(X)
        order = S.series_order(X) if hasattr(S, "series_order") else None
        Xs = X if order is None else X[order]
        rec[f"{key}|recovered"] = order is not None
        if pats is not None:
            rec[f"{key}|truth"] = S.matched_abs_corr(m.components_, pats)[1]
        if not plain:
            score_fit(m, Xs, rec, key)
        models.append(m)
    for key, (m, o) in zip("AB", (models, models[::-1]), strict=True):
        rec[f"{key}|actual"] = S.matched_abs_corr(m.components_, o.components_)[1]
        print(tag, key, rec[f"{key}|chosen"], np.round(rec[f"{key}|actual"], 2), flush=True)
    Path(out).mkdir(parents=True, exist_ok=True)
    np.savez(Path(out) / f"{tag.replace(':', '_')}.npz", **rec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tags", nargs="*")
    ap.add_argument("--out", default="/tmp/series20n")
    ap.add_argument("--summary", default=None)
    ap.add_argument("--plain", action="store_true", help="the default fits only (no splits)")
    args = ap.parse_args()
    if args.summary:
        from summarise_series20n import summarise

        summarise(args.summary)
    for tag in args.tags:
        run(tag, args.out, args.plain)


if __name__ == "__main__":
    main()
