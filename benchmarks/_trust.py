"""Evidence sets and scores for issue 20 (components a researcher can trust).

Data sets with what real data has (co-varying patterns, confounds), on real
meshes, and scores that compare any decomposition with its peers:

- ``atrophy(mesh, correlation, seed)``: :func:`neurospca.make_atrophy_cohort`
  with age and sex regressed out, the TV operator of both hemispheres (cortex
  only) and the planted patterns;
- ``paper2d(correlation, seed)``: the paper's 2-D simulation with correlated
  scores;
- ``recovery(components, patterns)``: matched |cos| and support Dice per
  planted pattern (Hungarian matching on |cos|);
- ``split_half(fit, X)``: matched |corr| and top-m Dice between the components
  fitted on two halves of the rows.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment

from neurospca import make_atrophy_cohort, make_paper_simulation, tv_from_hemispheres, tv_from_mask


def regress_out(X, confounds):
    """Residuals of ``X`` on ``[1, confounds]`` (least squares)."""
    C = np.column_stack([np.ones(len(X)), confounds])
    beta, *_ = np.linalg.lstsq(C, X, rcond=None)
    return X - C @ beta


def atrophy(mesh="fsaverage5", correlation=0.6, seed=0, n_samples=133):
    d = make_atrophy_cohort(n_samples, mesh=mesh, correlation=correlation, random_state=seed)
    n_left = d.n_vertices[0]
    op, _ = tv_from_hemispheres(d.mesh_left, d.mesh_right, d.cortex[:n_left], d.cortex[n_left:])
    X = regress_out(d.X[:, d.cortex], d.confounds)
    return X, op, d.patterns[:, d.cortex]


def paper2d(correlation=0.7, seed=0, n_samples=250):
    X, patterns, mask = make_paper_simulation(n_samples, random_state=seed, correlation=correlation)
    return X, tv_from_mask(mask), patterns


def _cos(A, B):
    An = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-300)
    Bn = B / np.maximum(np.linalg.norm(B, axis=1, keepdims=True), 1e-300)
    return np.abs(An @ Bn.T)


def _dice(a, b):
    s = a.sum() + b.sum()
    return 2.0 * np.sum(a & b) / s if s else 1.0


def recovery(components, patterns):
    """Per planted pattern: matched |cos| and Dice of supports (0 if unmatched)."""
    C = np.asarray(components, float)
    sim = _cos(patterns, C)
    rows, cols = linear_sum_assignment(-sim)
    cos = np.zeros(len(patterns))
    dice = np.zeros(len(patterns))
    for r, c in zip(rows, cols, strict=True):
        cos[r] = sim[r, c]
        dice[r] = _dice(patterns[r] != 0, C[c] != 0)
    return cos, dice


def certified_dice(model, patterns):
    """Per planted pattern: support Dice of the model's certified support
    (``certified_support_``, the support its report counts and draws), matched as
    :func:`recovery`; None when the model has none."""
    cert = getattr(model, "certified_support_", None)
    if cert is None:
        return None
    sim = _cos(patterns, np.asarray(model.components_, float))
    rows, cols = linear_sum_assignment(-sim)
    dice = np.zeros(len(patterns))
    for r, c in zip(rows, cols, strict=True):
        dice[r] = _dice(patterns[r] != 0, np.asarray(cert[c], bool))
    return dice


def joint_objective_of(model, X, operator):
    """The joint objective ``J`` (``neurospca.decomposition._objective``) of a
    fitted SPCATV on ``X`` at its own penalty: lower is the better factorisation."""
    from neurospca.decomposition._objective import best_scales
    from neurospca.solvers.penalties import eq3_pieces

    w = model.penalty_weights_
    Xc = np.asarray(X, float) - model.mean_
    n = len(Xc)
    V = model.components_.T
    keep = np.flatnonzero(np.any(V != 0, axis=0))
    U, E = model.scores_[:, keep], V[:, keep]
    pieces = eq3_pieces(w["l1"], w["tv"], operator, w["l2"])
    lin = np.array([2 * w["l2"] * sum(p.value(E[:, j]) for p in pieces) for j in range(len(keep))])
    a = np.einsum("ij,ij->j", U, Xc @ E)
    G = (U.T @ U) * (E.T @ E)
    _, value = best_scales(a, G, lin, np.zeros(len(keep)), w["l2"], n)
    return float(np.sum(Xc * Xc)) / (2 * n) + value


def top_m_dice(a, b, m):
    """Dice of the ``m`` largest-|value| features of two maps."""
    ia = np.zeros(a.size, bool)
    ib = np.zeros(a.size, bool)
    ia[np.argsort(-np.abs(a))[:m]] = True
    ib[np.argsort(-np.abs(b))[:m]] = True
    return _dice(ia, ib)


def compare(A, B, top_fraction=0.1):
    """Scores of two fitted K x P component arrays (halves of one data set).

    Returns matched |corr| per pair (Hungarian on |corr|), top-m Dice per pair
    (m = ``top_fraction`` of the features), the support fractions of both, and
    the Dice of the matched supports (top-m Dice ranks ties at zero
    arbitrarily when a map has fewer than m non-zeros).
    """
    A = np.asarray(A, float)
    B = np.asarray(B, float)
    sim = _cos(A - A.mean(axis=1, keepdims=True), B - B.mean(axis=1, keepdims=True))
    rows, cols = linear_sum_assignment(-sim)
    m = max(1, int(top_fraction * A.shape[1]))
    dice = np.array([top_m_dice(A[r], B[c], m) for r, c in zip(rows, cols, strict=True)])
    support = np.concatenate([np.mean(A != 0, axis=1), np.mean(B != 0, axis=1)])
    sdice = np.array([_dice(A[r] != 0, B[c] != 0) for r, c in zip(rows, cols, strict=True)])
    return sim[rows, cols], dice, support, sdice


def split_half(fit, X, seed=0, top_fraction=0.1):
    """Fit on two random halves of the rows; matched |corr| and top-m Dice.

    ``fit(X_half)`` returns components (K x P). ``m`` is ``top_fraction`` of
    the features. Returns (|corr| per matched pair, Dice per pair, support
    fractions of both halves).
    """
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(X))
    h = len(X) // 2
    corr, dice, support, _ = compare(fit(X[idx[:h]]), fit(X[idx[h : 2 * h]]), top_fraction)
    return corr, dice, support


def path_text(path, times=None):
    """The automatic path in one line: per split, each point's alpha_rel and mean
    split-half reproducibility (x: not admissible), and its seconds if ``times``."""
    parts, split = [], None
    for p, t in zip(path, times or [None] * len(path), strict=False):
        s = (p.get("l1_ratio"), p.get("tv_ratio"))
        head = f"{s[0]:g}: " if s != split else ""
        split = s
        nz = np.asarray(p["nonzero_fraction"])
        mark = "" if np.all(nz > 0) and np.all(nz <= 0.5) else "x"  # x: not admissible
        score = int(100 * np.mean(p["reproducibility"]))
        parts.append(f"{head}{p['alpha_rel']:g} .{score:02d}{mark}")
        parts[-1] += "" if t is None else f"({t:.0f}s)"
    return " ".join(parts)


def print_table_start(source, columns):
    """Print a run's first line (UTC time, load, where ``neurospca`` came from)
    and a Markdown table header with ``columns``."""
    import os
    import time

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {stamp} load {os.getloadavg()[0]:.1f} neurospca from {source}")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
