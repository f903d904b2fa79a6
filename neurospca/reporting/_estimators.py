"""What the report says about the method fitted: its name in the page header, its
citation and how it extracts components (methods paragraph), how its relative
``alpha`` reads in the Parameters table and how its fit stopped (Convergence).

SPCA-TV (:class:`~neurospca.SPCATV`) keeps the wording of :mod:`._methods`;
the four other estimators (SSPCA, NonnegativeSparsePCA, KTraceNormPCA,
HierarchicalDictionaryLearning) are described here, from their own fitted
attributes, read with ``getattr`` (a model saved by an older version may lack
some of them).
"""

import numpy as np

from ._tables import fmt

__all__ = [
    "SPCATV_TITLE",
    "method_of",
    "method_title",
    "method_citation",
    "method_sentence",
    "relative_alpha_text",
    "is_spcatv",
    "fit_convergence_rows",
    "variance_basis",
]

#: the header of an SPCA-TV report (and of any estimator not described below)
SPCATV_TITLE = "Structured sparse PCA (SPCA-TV)"

#: per estimator class name: header title and citation
_METHODS = {
    "SSPCA": (
        "Structured sparse PCA (Jenatton et al.)",
        "structured sparse PCA (SSPCA; Jenatton, Obozinski and Bach, Structured Sparse "
        "Principal Component Analysis, Proceedings of AISTATS, JMLR W&CP 9:366-373, 2010)",
    ),
    "NonnegativeSparsePCA": (
        "Nonnegative sparse PCA (Zass and Shashua)",
        "nonnegative sparse PCA (NSPCA; Zass and Shashua, Nonnegative Sparse PCA, "
        "Advances in Neural Information Processing Systems 19:1561-1568, 2007)",
    ),
    "KTraceNormPCA": (
        "Sparse PCA with the (k, PSD) trace norm",
        "sparse PCA with the (k, PSD) trace norm (Richard, Obozinski and Vert, Tight "
        "convex relaxations for sparse matrix factorization, Advances in Neural "
        "Information Processing Systems 27, 2014)",
    ),
    "HierarchicalDictionaryLearning": (
        "Hierarchical dictionary learning",
        "dictionary learning with tree-structured sparse codes (Jenatton, Mairal, "
        "Obozinski and Bach, Proximal Methods for Hierarchical Sparse Coding, Journal "
        "of Machine Learning Research 12:2297-2334, 2011)",
    ),
}


def method_of(estimator):
    """The name of the described method an estimator is (by its class or a parent's),
    or None (SPCA-TV and estimators not described here)."""
    for cls in type(estimator).__mro__:
        if cls.__name__ in _METHODS:
            return cls.__name__
    return None


def is_spcatv(estimator):
    """Whether the report describes the estimator as SPCA-TV (SPCATV and the
    estimators not described here, as the report always did)."""
    return method_of(estimator) is None


def method_title(estimator):
    """The method named in the page header."""
    method = method_of(estimator)
    return SPCATV_TITLE if method is None else _METHODS[method][0]


def method_citation(estimator, versions):
    """The methods paragraph's first sentence (a described method), or None."""
    method = method_of(estimator)
    if method is None:
        return None
    return (
        f"Components were estimated with {_METHODS[method][1]} as implemented in "
        f"neurospca {versions['neurospca']} ({type(estimator).__name__})."
    )


def _count(value, unit):
    try:
        return f"{len(value):,} {unit}"
    except TypeError:
        return None


def _sspca_sentence(est):
    groups = getattr(est, "groups", None)
    n_groups = _count(groups, "groups") if groups is not None else None
    text = (
        "The data were "
        + ("centred and " if getattr(est, "center", True) else "")
        + "factorised as X ~ U V^T, the loadings (columns of V) penalised by alpha "
        "times the structured norm (sum over groups G of ||d^G o v||_2^q)^(1/q) "
        f"(q = {fmt(getattr(est, 'exponent', None), 'g')}"
        + (f", over {n_groups}" if n_groups else "")
        + f"), the codes constrained to the unit {getattr(est, 'code_constraint', 'l2')} "
        "ball, by alternating the variational eta-step with block coordinate descent "
        "on the codes and loadings (Algorithm 1)"
    )
    alpha, a_max = getattr(est, "alpha_", None), getattr(est, "alpha_max_", None)
    if alpha is not None:
        text += f"; alpha = {float(alpha):.4g}"
        if a_max is not None and getattr(est, "alpha", 0.0) is None:
            text += (
                f", set relative to the data as alpha_rel x alpha_max = "
                f"{float(alpha) / float(a_max):.4g} x {float(a_max):.4g} (alpha_max: the "
                "smallest weight at which every loading is zero)"
            )
    return text + "."


def _nspca_sentence(est):
    return (
        "Nonnegative loadings U were found maximising 1/2 tr(U^T C U) - alpha/4 "
        "||I - U^T U||_F^2 - beta 1^T U 1 on the covariance C of the centred data by "
        "coordinate ascent with exact entry updates (the paper's eq. 3 and Algorithm 1), "
        f"with alpha = {fmt(getattr(est, 'alpha', None))} (orthonormality) and "
        f"beta = {fmt(getattr(est, 'beta', None))} (sparsity)"
        + (f", best of {est.n_init} starts" if getattr(est, "n_init", 1) != 1 else "")
        + "."
    )


def _ktrace_sentence(est):
    return (
        "The covariance of the centred data was estimated as a sum of k-sparse "
        "rank-one PSD atoms, minimising 1/2 ||Z - Sigma||_F^2 + alpha Omega_k(Z) with "
        f"the (k, PSD) trace norm Omega_k (k = {fmt(getattr(est, 'k_', getattr(est, 'k', None)))}"
        f", alpha = {fmt(getattr(est, 'alpha', None))}) by the paper's working-set "
        "algorithm (block minimisation and truncated power iteration); the components "
        "are the atoms, largest weights first."
    )


def _dictionary_sentence(est):
    tree = getattr(est, "tree_", None)
    n_nodes = None if tree is None else _tree_size(tree)
    return (
        "Each sample was coded on a dictionary of atoms (the components) with the "
        f"tree-structured norm on its codes (alpha = {fmt(getattr(est, 'alpha', None))}"
        + (f", l1 = {fmt(est.l1)}" if getattr(est, "l1", 0.0) else "")
        + (f", a tree of {n_nodes:,} nodes" if n_nodes else "")
        + "), alternating sparse coding (FISTA with the exact tree prox) and block "
        "coordinate descent on the atoms; the data were not centred."
    )


def _tree_size(tree):
    parent = getattr(tree, "parent", tree)
    try:
        return int(np.asarray(parent).size)
    except (TypeError, ValueError):
        return None


_SENTENCES = {
    "SSPCA": _sspca_sentence,
    "NonnegativeSparsePCA": _nspca_sentence,
    "KTraceNormPCA": _ktrace_sentence,
    "HierarchicalDictionaryLearning": _dictionary_sentence,
}


def method_sentence(estimator):
    """How a described method extracted the components (its objective and solver),
    or None."""
    method = method_of(estimator)
    return None if method is None else _SENTENCES[method](estimator)


def relative_alpha_text(estimator):
    """The Parameters table's text for ``alpha=None`` (relative to the data)."""
    if method_of(estimator) == "SSPCA":
        return "None (data-relative: alpha_rel x alpha_max_)"
    return "None (data-relative: alpha_rel x l1_max_)"


def _stop_rule(estimator):
    if method_of(estimator) == "KTraceNormPCA":
        return "the polar of the residual at most alpha (up to tol)"
    return "relative change of the objective at most tol"


def fit_convergence_rows(estimator):
    """Rows of the whole fit's convergence (iterations, converged, objective and the
    certified gap where the method has one), for a method without per-component
    gaps.

    Returns
    -------
    list of (str, str)
    """
    rows = [("stopping rule", _stop_rule(estimator))]
    tol = getattr(estimator, "tol", None)
    if tol is not None:
        rows.append(("tol", fmt(tol, "g")))
    n_iter = getattr(estimator, "n_iter_", None)
    if n_iter is not None:
        rows.append(("iterations (n_iter_)", fmt(int(n_iter) if np.ndim(n_iter) == 0 else n_iter)))
    conv = getattr(estimator, "converged_", None)
    rows.append(
        ("converged (converged_)", "not recorded" if conv is None else fmt(bool(np.all(conv))))
    )
    objective = getattr(estimator, "objective_", None)
    if objective is not None:
        rows.append(("final objective", fmt(float(objective))))
    gaps = getattr(estimator, "dual_gaps_", None)
    if gaps is not None and np.size(gaps):
        rows.append(("certified duality gap", fmt(float(np.ravel(gaps)[0]), ".2e")))
    return rows


def variance_basis(estimator):
    """What a described method's explained variance ratio is a share of."""
    if method_of(estimator) == "HierarchicalDictionaryLearning":
        return (
            "the second moment of the data, not centred (the dictionary has no mean), "
            "for the codes' reconstruction"
        )
    return "the total variance of the centred data"
