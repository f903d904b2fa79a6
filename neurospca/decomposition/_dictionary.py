"""Tree-structured dictionary learning (Jenatton, Mairal, Obozinski, Bach 2010).

Sparse coding by FISTA with the exact tree prox (:func:`tree_sparse_coding`,
in ``_tree_coding``), the dictionary update by block coordinate descent, and
the estimator :class:`HierarchicalDictionaryLearning` that alternates them.
"""

import logging
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.validation import check_data, check_real
from ..trees import check_tree
from ._base import (
    _DEPRECATED_OPTION,
    DEPRECATED,
    ComponentsEstimator,
    Integral,
    Interval,
    Real,
    StrOptions,
    _renamed,
    data_adjusted_variance,
    progress,
)
from ._tree import _NORMS, _check_weights, _tree_norm
from ._tree_coding import _check_mask, _sparse_code, tree_sparse_coding

logger = logging.getLogger("neurospca")

__all__ = ["tree_sparse_coding", "HierarchicalDictionaryLearning"]


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
            for j, i in zip(kids, picks, strict=True):
                r = R[i] + 1e-3 * np.std(X) * rng.standard_normal(X.shape[1])
                C[j] = _project_dict_ball(r / max(np.linalg.norm(r), 1e-300), mu, nonneg)
    return C


def _dl_objective(X, A, C, tree, radii, norm, l1):
    R = X - A @ C
    n = X.shape[0]
    pen = _tree_norm(A, tree, radii, norm).sum()
    pen += l1 * np.abs(A).sum()
    return (0.5 * float(np.einsum("ij,ij->", R, R)) + pen) / n


class HierarchicalDictionaryLearning(ComponentsEstimator):
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
        Number of atoms when ``tree`` is None (ignored otherwise: the tree's
        nodes are the atoms). 8, not scikit-learn's ``None`` (as many atoms
        as features): a flat dictionary is the degenerate case of this
        estimator, which is meant to be given a tree; the default is kept
        so default fits do not change.
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
    verbose : int, default=0
        When > 0, log each alternation's objective and relative decrease
        (INFO records on the ``"neurospca"`` logger; printed to stdout when
        no handler is attached there).

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
    converged_ : bool
        Whether the relative decrease of the objective reached ``tol``
        within ``max_iter`` alternations (else a ConvergenceWarning names
        both; one alternation cannot be judged and is not converged).
    n_components_ : int
        Number of atoms (the tree's nodes).
    explained_variance_ : ndarray of shape (n_nodes,)
        What the sparse codes' reconstruction ``X_hat = scores_ @
        components_`` explains, per atom: the adjusted variance (Zou et al.
        2006) of ``X_hat`` on the unit-normalised atoms (QR of the scores
        ``X_hat W^T``, ``R_kk^2 / n``). The dictionary does not centre, so
        variance means the second moment ``||X||_F^2 / n``.
    explained_variance_ratio_ : ndarray of shape (n_nodes,)
        ``explained_variance_`` over ``||X||_F^2 / n`` (over their sum if
        that is larger, which the coding tolerance can cause): in [0, 1],
        summing to at most 1.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Names of the features seen in ``fit`` (string column names only).

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
        verbose=0,
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
        self.verbose = verbose

    _parameter_constraints = {
        **ComponentsEstimator._parameter_constraints,
        "tree": ["array-like", None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "norm": [StrOptions(set(_NORMS))],
        "weights": ["array-like", Interval(Real, 0, None, closed="left"), None],
        "l1": [Interval(Real, 0, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "positive_code": ["boolean"],
        "positive_dict": ["boolean"],
        "n_dict_passes": [Interval(Integral, 1, None, closed="left")],
        "max_coding_iter": [Interval(Integral, 1, None, closed="left")],
        "transform_alpha": [Interval(Real, 0, None, closed="left"), None],
        "init": [StrOptions({"data", "hierarchical"})],
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

    def _fit(self, X):
        """Validate ``X``, draw the initial atoms, alternate coding and atoms."""
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False)
        X = check_data(X, min_samples=1)
        alpha, _ = self._alphas()
        if self.tree is None:
            tree = check_tree(-np.ones(self.n_components, dtype=np.int64))
        else:
            tree = check_tree(self.tree)
        radii = alpha * _check_weights(self.weights, tree.n_nodes)
        rng = check_random_state(self.random_state)
        C = self._initial_atoms(X, tree, radii, rng)
        A, C, objective, it = self._alternate(X, C, tree, radii, rng)
        self.components_ = C
        self.tree_ = tree
        self.scores_ = A
        self.objective_ = float(objective[-1])
        self.objective_history_ = objective
        self.n_iter_ = it
        self.explained_variance_, self.explained_variance_ratio_ = _reconstruction_variance(X, A, C)

    def _initial_atoms(self, X, tree, radii, rng):
        """Random training samples (plus a little noise) in the atoms' set, then,
        with ``init="hierarchical"``, the coarse-to-fine initialisation."""
        n, m = X.shape
        p = tree.n_nodes
        mu, pos = float(self.mu), self.positive_dict
        idx = rng.choice(n, size=p, replace=n < p)
        C = X[idx] + 0.01 * np.std(X) * rng.standard_normal((p, m))
        for j in range(p):
            C[j] = _project_dict_ball(C[j], mu, pos) if np.any(C[j]) else C[j]
        if self.init == "hierarchical" and len(tree.levels) > 1:
            C = _hierarchical_init(
                X,
                C,
                tree,
                radii,
                self.norm,
                float(self.l1),
                self.positive_code,
                mu,
                pos,
                self.n_dict_passes,
                self.max_coding_iter,
                max(1, min(10, self.max_iter)),
                rng,
            )
        return C

    def _alternate(self, X, C, tree, radii, rng):
        """Sparse coding and atom updates until the objective settles.

        Sets ``converged_`` and warns (ConvergenceWarning) when it does not.

        Returns
        -------
        A, C, objective, n_iter
        """
        l1, mu, norm, tol = float(self.l1), float(self.mu), self.norm, float(self.tol)
        A = None
        objective = []
        change = np.inf
        self.converged_ = False
        it = 0
        for it in range(1, self.max_iter + 1):
            A, _, _ = _sparse_code(
                X, C, tree, radii, norm, l1, self.positive_code, None, A, self.max_coding_iter, 1e-4
            )
            C = _update_dictionary(C, X, A, mu, self.positive_dict, self.n_dict_passes, rng)
            objective.append(_dl_objective(X, A, C, tree, radii, norm, l1))
            if it > 1:
                change = abs(objective[-2] - objective[-1]) / max(abs(objective[-1]), 1e-300)
            progress(
                type(self).__name__,
                self.verbose,
                "iteration %d: objective %.10g, relative decrease %.2e",
                it,
                objective[-1],
                change,
            )
            if it > 1 and abs(objective[-2] - objective[-1]) <= tol * max(
                abs(objective[-1]), 1e-300
            ):
                self.converged_ = True
                break
        if not self.converged_:
            warnings.warn(
                f"HierarchicalDictionaryLearning did not converge in {self.max_iter} "
                f"iterations (relative decrease {change:.2e} > tol={tol}); increase max_iter.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return A, C, objective, it

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


def _reconstruction_variance(X, A, C):
    """Per atom, what the codes' reconstruction ``A C`` explains of ``X``.

    Zou et al.'s adjusted variance of ``X_hat = A C`` on the unit-normalised
    atoms (:func:`neurospca.decomposition._base.data_adjusted_variance`), over
    the second moment of ``X`` (no centring: the dictionary has no mean), or
    over the variances' sum when the coding tolerance makes it larger.
    """
    n = X.shape[0]
    var, _ = data_adjusted_variance(A @ C, C)
    total = max(float(np.sum(X * X)) / n, float(var.sum()))
    return var, var / total if total > 0 else np.zeros_like(var)
