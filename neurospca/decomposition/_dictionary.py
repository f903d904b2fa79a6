"""Tree-structured dictionary learning (Jenatton, Mairal, Obozinski, Bach 2010).

Sparse coding by FISTA with the exact tree prox (:func:`tree_sparse_coding`),
the dictionary update by block coordinate descent, and the estimator
:class:`HierarchicalDictionaryLearning` that alternates them.
"""

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.docs import fill_doc
from .._utils.validation import check_data, check_int, check_nonneg, check_real
from ..trees import check_tree
from ._base import (
    _DEPRECATED_OPTION,
    DEPRECATED,
    Integral,
    Interval,
    Real,
    StrOptions,
    _fit_context,
    _renamed,
)
from ._tree import _NORMS, _check_norm, _check_weights, _prox_tree, _tree_norm

logger = logging.getLogger("neurospca")

__all__ = ["tree_sparse_coding", "HierarchicalDictionaryLearning"]


def _masked_lipschitz(C, mask):
    """Per-sample ``||C diag(m_i) C^T||_2`` for 0/1 masks (rows of ``mask``)."""
    n = mask.shape[0]
    L = np.empty(n)
    chunk = max(1, 4_000_000 // max(C.size, 1))
    for s in range(0, n, chunk):
        M = mask[s : s + chunk]
        Ct = C[None, :, :] * M[:, None, :]  # (b, p, m)
        L[s : s + chunk] = np.linalg.norm(Ct, ord=2, axis=(1, 2)) ** 2
    return L


def _sparse_code(X, C, tree, radii, norm, l1, nonneg, mask, A0, max_iter, tol):
    """FISTA on ``sum_i 1/2 ||m_i o (x_i - a_i C)||^2 + Omega(a_i)`` (unchecked).

    Rows are independent problems sharing the dictionary ``C`` (p, m); each
    has its own step ``1 / L_i``, momentum, adaptive restart and stopping
    test ``||a_k - a_{k-1}|| <= tol ||a_k||`` (a converged row is frozen), so
    the code of a row does not depend on the other rows. Returns codes (n, p),
    the number of iterations and whether every row converged.
    """
    n, p = X.shape[0], C.shape[0]
    if mask is None:
        L = np.full(n, np.linalg.norm(C @ C.T, 2))
        CX = X @ C.T
    else:
        L = _masked_lipschitz(C, mask)
        CX = (X * mask) @ C.T
    step = 1.0 / np.maximum(L, 1e-12)
    G = C @ C.T
    A = np.zeros((n, p)) if A0 is None else np.array(A0, dtype=np.float64)
    Y = A.copy()
    t = np.ones(n)
    active = np.arange(n)
    it = 0
    for it in range(1, max_iter + 1):
        Ya, sa = Y[active], step[active]
        if mask is None:
            grad = Ya @ G - CX[active]
        else:
            grad = ((Ya @ C) * mask[active]) @ C.T - CX[active]
        Z = Ya - sa[:, None] * grad
        if nonneg:
            Z = np.maximum(Z, 0.0)
        if l1 > 0:
            Z = np.sign(Z) * np.maximum(np.abs(Z) - (sa * l1)[:, None], 0.0)
        A_new = _prox_tree(Z, tree, radii, norm, row_scale=sa)
        diff = A_new - A[active]
        ta = t[active]
        # adaptive restart (O'Donoghue and Candes): momentum against progress
        ta = np.where(np.einsum("ij,ij->i", Ya - A_new, diff) > 0, 1.0, ta)
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * ta * ta))
        Y[active] = A_new + ((ta - 1.0) / t_new)[:, None] * diff
        A[active] = A_new
        t[active] = t_new
        dn = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        an = np.sqrt(np.einsum("ij,ij->i", A_new, A_new))
        done = dn <= tol * np.maximum(an, 1e-12)
        if np.any(done):
            active = active[~done]
            if active.size == 0:
                break
    return A, it, active.size == 0


def _check_mask(mask, shape):
    if mask is None:
        return None
    M = np.asarray(mask)
    if M.shape != shape:
        raise ValueError(f"mask must have the shape of X {shape}, got {M.shape}.")
    if M.dtype != bool:
        if not np.all(np.isin(M, (0, 1))):
            raise ValueError("mask must be boolean (True = observed entry).")
    return M.astype(np.float64)


def tree_sparse_coding(
    X,
    dictionary,
    tree,
    alpha=None,
    *,
    weights=None,
    norm="l2",
    l1=0.0,
    nonneg=False,
    mask=None,
    init=None,
    max_iter=500,
    tol=1e-4,
    lam=None,
):
    """Tree-structured sparse coding by FISTA with the exact tree prox.

    Each row ``x_i`` of ``X`` is coded independently:

    .. math::

        \\min_{a_i} \\tfrac12 \\|m_i \\circ (x_i - D^T a_i)\\|_2^2
        + \\alpha \\sum_j w_j \\|a_{i|g_j}\\| + l_1 \\|a_i\\|_1

    where ``D`` is ``dictionary`` (atoms as rows) and ``m_i`` the optional 0/1
    observation mask (inpainting: missing entries are ignored, Jenatton et al.
    2010, section 4). The step of sample ``i`` is ``1 / ||D diag(m_i) D^T||``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The signals, one per row.
    dictionary : array-like of shape (n_nodes, n_features)
        The atoms, one per row.
    tree : array-like of int or Tree
        Parent array over the ``n_nodes`` atoms.
    alpha : float
        Weight of the tree norm (>= 0); required.
    weights : float or array-like of shape (n_nodes,), optional
        Group weights ``w_j >= 0`` (default 1).
    norm : {"l2", "linf"}, default="l2"
        The norm of each group.
    l1 : float, default=0.0
        Extra ℓ1 weight on the codes.
    nonneg : bool, default=False
        Nonnegative codes.
    mask : array-like of bool, shape (n_samples, n_features), optional
        True where ``X`` is observed; missing entries are ignored (they may
        be NaN).
    init : array-like of shape (n_samples, n_nodes), optional
        Warm start.
    max_iter : int, default=500
        Maximum FISTA iterations.
    tol : float, default=1e-4
        Stop when ``||A_k - A_{k-1}||_F <= tol ||A_k||_F``.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning).

    Returns
    -------
    codes : ndarray of shape (n_samples, n_nodes)
        The codes, one row per signal.
    """
    alpha = _renamed(lam, alpha, "lam", "alpha", "tree_sparse_coding")
    if alpha is None:
        raise TypeError(
            "tree_sparse_coding() missing the argument alpha (the weight of the tree norm)."
        )
    if mask is not None:  # missing entries may hold anything, NaN included
        X = np.asarray(X, dtype=np.float64)
        X = np.where(_check_mask(mask, X.shape) > 0, X, 0.0)
    X = check_data(X, min_samples=1)
    D = np.asarray(dictionary, dtype=np.float64)
    if D.ndim != 2 or D.shape[1] != X.shape[1]:
        raise ValueError(f"dictionary must have shape (n_nodes, {X.shape[1]}), got {D.shape}.")
    if not np.all(np.isfinite(D)):
        raise ValueError("dictionary contains NaN or infinite values.")
    tree = check_tree(tree, n_nodes=D.shape[0])
    alpha = check_nonneg(alpha, "alpha")
    l1 = check_nonneg(l1, "l1")
    norm = _check_norm(norm)
    w = _check_weights(weights, tree.n_nodes)
    M = _check_mask(mask, X.shape)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_nonneg(tol, "tol", strict=True)
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (X.shape[0], D.shape[0]):
            raise ValueError(
                f"init must have shape ({X.shape[0]}, {D.shape[0]}), got {init.shape}."
            )
    A, n_iter, conv = _sparse_code(
        X, D, tree, alpha * w, norm, l1, bool(nonneg), M, init, max_iter, tol
    )
    if not conv:
        warnings.warn(
            f"tree_sparse_coding did not converge in {max_iter} iterations "
            f"(tol={tol}); increase max_iter.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return A


def _project_dict_ball(b, mu, nonneg):
    """Projection on ``{d : mu ||d||_1 + (1 - mu) ||d||_2^2 <= 1}`` (and ``d >= 0``).

    KKT: ``d = soft(b, t mu) / (1 + 2 t (1 - mu))`` with ``t >= 0`` found by
    bisection so that the constraint is active (or ``t = 0`` if inside).
    """
    if nonneg:
        b = np.maximum(b, 0.0)

    def g(t):
        d = np.sign(b) * np.maximum(np.abs(b) - t * mu, 0.0) / (1.0 + 2.0 * t * (1.0 - mu))
        return d, mu * np.abs(d).sum() + (1.0 - mu) * float(d @ d)

    d, val = g(0.0)
    if val <= 1.0:
        return d
    if mu == 0.0:
        return b / np.sqrt(float(b @ b))
    lo, hi = 0.0, 1.0
    while g(hi)[1] > 1.0:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if g(mid)[1] > 1.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * max(hi, 1.0):
            break
    return g(hi)[0]


def _update_dictionary(C, X, A, mu, nonneg, n_passes, rng):
    """Block coordinate descent on the atoms (Mairal et al. 2010), in place.

    ``C`` (p, m) atoms as rows; minimises ``1/2 ||X - A C||_F^2`` over the
    constraint set, one atom at a time. Unused atoms are re-drawn from the data.
    """
    Gm = A.T @ A
    B = A.T @ X
    for _ in range(n_passes):
        for j in range(C.shape[0]):
            if Gm[j, j] <= 1e-12:
                x = X[rng.randint(X.shape[0])]
                C[j] = _project_dict_ball(x + 1e-3 * rng.standard_normal(x.size), mu, nonneg)
                continue
            C[j] = _project_dict_ball(C[j] + (B[j] - Gm[j] @ C) / Gm[j, j], mu, nonneg)
    return C


def _hierarchical_init(
    X, C, tree, radii, norm, l1, positive_code, mu, nonneg, n_passes, coding_iter, n_alt, rng
):
    """Coarse-to-fine initialisation of a tree dictionary, in place.

    The atoms of depth < d are learned first (``n_alt`` alternations on the
    tree cut below depth d - 1, starting from the current atoms); each atom of
    depth d is then drawn from the residual of a sample whose code uses its
    parent (the only samples that can use it), normalised; siblings get
    distinct samples when there are enough. Roots keep their initial atoms.
    A random initialisation of all the nodes lets a child be learned far from
    the samples of its parent, a local minimum that alternations do not
    leave.
    """
    parent = tree.parent
    n = X.shape[0]
    for d in range(1, len(tree.levels)):
        sub = np.sort(np.concatenate(tree.levels[:d]))
        remap = np.full(parent.size, -1, dtype=np.int64)
        remap[sub] = np.arange(sub.size)
        sub_tree = check_tree(np.where(parent[sub] >= 0, remap[np.maximum(parent[sub], 0)], -1))
        Cs = C[sub].copy()
        A = None
        for _ in range(n_alt):
            A, _, _ = _sparse_code(
                X, Cs, sub_tree, radii[sub], norm, l1, positive_code, None, A, coding_iter, 1e-4
            )
            Cs = _update_dictionary(Cs, X, A, mu, nonneg, n_passes, rng)
        A, _, _ = _sparse_code(
            X, Cs, sub_tree, radii[sub], norm, l1, positive_code, None, A, coding_iter, 1e-4
        )
        C[sub] = Cs
        R = X - A @ Cs
        level = tree.levels[d]
        for q in np.unique(parent[level]):
            kids = level[parent[level] == q]
            users = np.flatnonzero(A[:, remap[q]] != 0)
            pool = users if users.size else np.arange(n)
            picks = rng.choice(pool, size=kids.size, replace=pool.size < kids.size)
            for j, i in zip(kids, picks):
                r = R[i] + 1e-3 * np.std(X) * rng.standard_normal(X.shape[1])
                C[j] = _project_dict_ball(r / max(np.linalg.norm(r), 1e-300), mu, nonneg)
    return C


def _dl_objective(X, A, C, tree, radii, norm, l1):
    R = X - A @ C
    n = X.shape[0]
    pen = _tree_norm(A, tree, radii, norm).sum()
    pen += l1 * np.abs(A).sum()
    return (0.5 * float(np.einsum("ij,ij->", R, R)) + pen) / n


class HierarchicalDictionaryLearning(TransformerMixin, BaseEstimator):
    """Dictionary learning with tree-structured sparse codes.

    Solves (Jenatton, Mairal, Obozinski and Bach 2010, eq. 1)

    .. math::

        \\min_{D \\in \\mathcal{D}_\\mu, A} \\frac1n \\sum_{i=1}^n
        \\tfrac12 \\|x_i - D^T a_i\\|_2^2 + \\alpha\\, \\Omega(a_i)
        + l_1 \\|a_i\\|_1,
        \\qquad \\Omega(a) = \\sum_j w_j \\|a_{|g_j}\\|

    where the atoms (rows of ``D``) are the nodes of ``tree``, ``g_j`` is node
    ``j`` and its descendants, and the atoms lie in
    ``D_mu = {d : mu ||d||_1 + (1 - mu) ||d||_2^2 <= 1}`` (``mu = 0``: unit ℓ2
    ball, the paper's choice for image patches; ``mu = 1`` with
    ``positive_dict``: the nonnegative ℓ1 ball used for text). Codes are
    computed by FISTA with the exact prox (:func:`prox_tree`), warm-started;
    atoms by block coordinate descent. The outer loop stops on the relative
    decrease of the objective.

    Parameters
    ----------
    tree : array-like of int, optional
        Parent array of the atoms (``-1`` for roots), e.g. from
        :func:`balanced_tree`. Default: ``n_components`` roots, i.e. a flat
        dictionary with the ℓ2 (or ℓ∞) norm of singletons, an ℓ1 penalty.
    n_components : int, default=8
        Number of atoms when ``tree`` is None (ignored otherwise).
    alpha : float, default=0.1
        Weight of the tree norm.
    norm : {"l2", "linf"}, default="l2"
        The norm of each group.
    weights : float or array-like of shape (n_nodes,), optional
        Group weights (default 1).
    l1 : float, default=0.0
        Extra ℓ1 weight on the codes.
    mu : float in [0, 1], default=0.0
        Dictionary constraint ``D_mu``.
    positive_code, positive_dict : bool, default=False
        Nonnegative codes, nonnegative atoms.
    max_iter : int, default=30
        Outer alternations.
    n_dict_passes : int, default=5
        Block-coordinate passes over the atoms per alternation.
    max_coding_iter : int, default=200
        FISTA iterations per coding step.
    tol : float, default=1e-4
        Relative decrease of the objective that stops the outer loop.
    transform_alpha : float, optional
        Tree-norm weight used by :meth:`transform` (the paper tunes a separate
        test-time weight); default ``alpha``.
    init : {"hierarchical", "data"}, default="hierarchical"
        Initial atoms. ``"hierarchical"``: coarse to fine; the roots start as
        random training samples, the tree cut at each depth is learned
        (``min(10, max_iter)`` alternations) and each atom of the next depth
        starts as the residual of a sample that uses its parent.
        ``"data"``: every atom is a random training sample (plus a little
        noise). With random atoms at every node, a child is often learned
        away from the samples of its parent, a local minimum the alternations
        do not leave (on depth-4 synthetic trees the ``"data"`` objective
        stays above that of the generating dictionary, and the tree then
        inpaints worse than a flat dictionary at low missing rates). The two
        are the same for a flat dictionary (a forest of roots).
    random_state : int, RandomState or None
        Seed of the initial atoms.
    lam : float, optional
        Deprecated name of ``alpha`` (FutureWarning).
    transform_lam : float, optional
        Deprecated name of ``transform_alpha`` (FutureWarning).

    Attributes
    ----------
    components_ : ndarray of shape (n_nodes, n_features)
        The atoms.
    tree_ : Tree
        The validated tree.
    scores_ : ndarray of shape (n_samples, n_nodes)
        The training codes of the last coding step (with the atoms before the
        last dictionary update).
    objective_ : float
        Final objective.
    objective_history_ : list of float
        Objective after each alternation.
    n_iter_ : int
        Alternations run.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from neurospca import HierarchicalDictionaryLearning, balanced_tree
    >>> X = np.random.default_rng(0).standard_normal((50, 16))
    >>> model = HierarchicalDictionaryLearning(balanced_tree((2, 2)), alpha=0.1,
    ...                                        tol=1e-2).fit(X)
    >>> model.components_.shape
    (7, 16)
    """

    def __init__(
        self,
        tree=None,
        *,
        n_components=8,
        alpha=0.1,
        norm="l2",
        weights=None,
        l1=0.0,
        mu=0.0,
        positive_code=False,
        positive_dict=False,
        max_iter=30,
        n_dict_passes=5,
        max_coding_iter=200,
        tol=1e-4,
        transform_alpha=None,
        init="hierarchical",
        random_state=None,
        lam=DEPRECATED,
        transform_lam=DEPRECATED,
    ):
        self.tree = tree
        self.n_components = n_components
        self.alpha = alpha
        self.norm = norm
        self.weights = weights
        self.l1 = l1
        self.mu = mu
        self.positive_code = positive_code
        self.positive_dict = positive_dict
        self.max_iter = max_iter
        self.n_dict_passes = n_dict_passes
        self.max_coding_iter = max_coding_iter
        self.tol = tol
        self.transform_alpha = transform_alpha
        self.init = init
        self.random_state = random_state
        self.lam = lam
        self.transform_lam = transform_lam

    _parameter_constraints = {
        "tree": ["array-like", None],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "norm": [StrOptions(set(_NORMS))],
        "weights": ["array-like", Interval(Real, 0, None, closed="left"), None],
        "l1": [Interval(Real, 0, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "positive_code": ["boolean"],
        "positive_dict": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_dict_passes": [Interval(Integral, 1, None, closed="left")],
        "max_coding_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "transform_alpha": [Interval(Real, 0, None, closed="left"), None],
        "init": [StrOptions({"data", "hierarchical"})],
        "random_state": ["random_state"],
        "lam": [Interval(Real, 0, None, closed="left"), _DEPRECATED_OPTION],
        "transform_lam": [Interval(Real, 0, None, closed="left"), None, _DEPRECATED_OPTION],
    }

    def _alphas(self):
        """The (fit, transform) weights, the deprecated names included."""
        name = type(self).__name__
        alpha = float(_renamed(self.lam, self.alpha, "lam", "alpha", name))
        t_alpha = _renamed(
            self.transform_lam, self.transform_alpha, "transform_lam", "transform_alpha", name
        )
        return alpha, alpha if t_alpha is None else float(t_alpha)

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Learn the dictionary from ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training signals.
        %(y_ignored)s

        Returns
        -------
        self : HierarchicalDictionaryLearning
            The fitted estimator.
        """
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False)
        X = check_data(X, min_samples=1)
        alpha, _ = self._alphas()
        if self.tree is None:
            tree = check_tree(-np.ones(self.n_components, dtype=np.int64))
        else:
            tree = check_tree(self.tree)
        w = _check_weights(self.weights, tree.n_nodes)
        l1, mu, norm, tol = float(self.l1), float(self.mu), self.norm, float(self.tol)
        rng = check_random_state(self.random_state)
        n, m = X.shape
        p = tree.n_nodes
        pos = self.positive_dict
        idx = rng.choice(n, size=p, replace=n < p)
        C = X[idx] + 0.01 * np.std(X) * rng.standard_normal((p, m))
        for j in range(p):
            C[j] = _project_dict_ball(C[j], mu, pos) if np.any(C[j]) else C[j]
        radii = alpha * w
        if self.init == "hierarchical" and len(tree.levels) > 1:
            C = _hierarchical_init(
                X,
                C,
                tree,
                radii,
                norm,
                l1,
                self.positive_code,
                mu,
                pos,
                self.n_dict_passes,
                self.max_coding_iter,
                max(1, min(10, self.max_iter)),
                rng,
            )
        A = None
        objective = []
        it = 0
        for it in range(1, self.max_iter + 1):
            A, _, _ = _sparse_code(
                X, C, tree, radii, norm, l1, self.positive_code, None, A, self.max_coding_iter, 1e-4
            )
            C = _update_dictionary(C, X, A, mu, pos, self.n_dict_passes, rng)
            objective.append(_dl_objective(X, A, C, tree, radii, norm, l1))
            logger.debug(
                "HierarchicalDictionaryLearning: iteration %d, objective %.6g", it, objective[-1]
            )
            if it > 1 and abs(objective[-2] - objective[-1]) <= tol * max(
                abs(objective[-1]), 1e-300
            ):
                break
        else:
            if self.max_iter > 1:
                warnings.warn(
                    f"HierarchicalDictionaryLearning did not converge in {self.max_iter} "
                    f"iterations (relative decrease > tol={tol}); increase max_iter.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
        self.components_ = C
        self.tree_ = tree
        self.scores_ = A
        self.objective_ = float(objective[-1])
        self.objective_history_ = objective
        self.n_iter_ = it
        return self

    def transform(self, X, mask=None):
        """Tree-structured codes of ``X`` on the learned dictionary.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The signals to code.
        mask : array-like of bool, shape (n_samples, n_features), optional
            True where ``X`` is observed (inpainting); missing entries are
            ignored (they may be NaN).

        Returns
        -------
        ndarray of shape (n_samples, n_nodes)
            The codes.
        """
        check_is_fitted(self)
        check_real(X, "X")
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=False)
        M = _check_mask(mask, X.shape)
        if M is not None:  # missing entries may hold anything, NaN included
            X = np.where(M > 0, X, 0.0)
        X = check_data(X, min_samples=1)
        _, alpha_te = self._alphas()
        w = _check_weights(self.weights, self.tree_.n_nodes)
        A, _, _ = _sparse_code(
            X,
            self.components_,
            self.tree_,
            alpha_te * w,
            self.norm,
            float(self.l1),
            self.positive_code,
            M,
            None,
            self.max_coding_iter * 5,
            1e-5,
        )
        return A

    def inverse_transform(self, X):
        """Signals from codes: ``codes @ components_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_nodes)
            Codes.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The signals.
        """
        check_is_fitted(self)
        A = np.asarray(X, dtype=np.float64)
        if A.ndim != 2 or A.shape[1] != self.components_.shape[0]:
            raise ValueError(
                f"X must have shape (n_samples, {self.components_.shape[0]}), got {A.shape}."
            )
        return A @ self.components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
