"""Comparison of loadings: held-out error, supports (Dice), matching, truth.

The criteria of the SPCA-TV paper, section III: :func:`reconstruction_error`
(re-exported from :mod:`neurospca.decomposition`) and its scorer form
:func:`neg_reconstruction_error`; the Dice index of loading supports
(:func:`dice_index`, :func:`pairwise_dice`, :func:`corrected_stability`) after
matching components (:func:`match_components`); the distance to known
patterns (:func:`mse_to_truth`, :func:`dice_to_truth`); the sparsity rule and
the sign-flip permutation test.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._utils.validation import check_components, check_int, check_matrix
from ..decomposition import reconstruction_error

__all__ = [
    "reconstruction_error",
    "neg_reconstruction_error",
    "dice_index",
    "pairwise_dice",
    "corrected_stability",
    "match_components",
    "mse_to_truth",
    "dice_to_truth",
    "sparsity_rule",
    "sign_permutation_test",
]


def neg_reconstruction_error(estimator, X, y=None):
    """Scorer for scikit-learn tools: minus :func:`reconstruction_error`.

    Has the ``scorer(estimator, X, y)`` signature that
    :class:`sklearn.model_selection.GridSearchCV` and
    :func:`sklearn.model_selection.cross_val_score` accept as ``scoring``
    (greater is better, hence the minus sign). Works with any fitted
    estimator exposing ``components_`` and ``mean_`` (SPCATV, SparsePCA,
    PCA).

    Parameters
    ----------
    estimator : fitted estimator
    X : array-like of shape (n_samples, n_features)
    y : ignored

    Returns
    -------
    float
    """
    return -reconstruction_error(X, estimator)


# --------------------------------------------------------------------------
# supports, Dice, matching
# --------------------------------------------------------------------------


def _support(v, threshold):
    return np.abs(v) > threshold


def dice_index(a, b, threshold=0.0):
    """Dice index of the supports of two loading vectors.

    .. math::

        D(a, b) = \\frac{2 |S_a \\cap S_b|}{|S_a| + |S_b|}, \\qquad
        S_a = \\{ j : |a_j| > t \\}

    Signs are ignored (a loading and its negative have the same support).
    Two empty supports give 1 (they agree); one empty support gives 0.

    Parameters
    ----------
    a, b : array-like of shape (n_features,)
    threshold : float, default=0.0
        ``t``: entries with ``|a_j| <= t`` are outside the support.

    Returns
    -------
    float in [0, 1]
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same size, got {a.size} and {b.size}.")
    if not threshold >= 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}.")
    sa, sb = _support(a, threshold), _support(b, threshold)
    denom = int(sa.sum()) + int(sb.sum())
    if denom == 0:
        return 1.0
    return 2.0 * int((sa & sb).sum()) / denom


def _abs_corr(A, B):
    """|cosine| between the rows of A and of B (rows need not be centred).

    The loadings are compared as vectors (uncentred correlation, i.e. the
    cosine), which is what matters for supports and spans. Zero rows have
    similarity 0 with everything.
    """
    na = np.linalg.norm(A, axis=1)
    nb = np.linalg.norm(B, axis=1)
    na = np.where(na > 0, na, np.inf)
    nb = np.where(nb > 0, nb, np.inf)
    return np.abs((A / na[:, None]) @ (B / nb[:, None]).T)


def match_components(reference, components):
    """Match components to reference components (order and sign).

    The assignment maximises the sum of the absolute cosines
    ``|<r_i, c_j>| / (||r_i|| ||c_j||)`` over permutations (Hungarian
    algorithm, :func:`scipy.optimize.linear_sum_assignment`), so a component
    found in another order, or with the opposite sign, is paired with its
    counterpart.

    Parameters
    ----------
    reference : array-like of shape (n_ref, n_features) or estimator
    components : array-like of shape (n_components, n_features) or estimator

    Returns
    -------
    order : ndarray of int, shape (min(n_ref, n_components),)
        ``components[order[i]]`` is matched to ``reference[i]``.
    signs : ndarray of shape (min(n_ref, n_components),)
        +1 or -1: ``signs[i] * components[order[i]]`` has a non-negative inner
        product with ``reference[i]``.
    similarity : ndarray of shape (min(n_ref, n_components),)
        The absolute cosines of the matched pairs.
    """
    R = check_components(reference, "reference")
    C = check_matrix(check_components(components), "components", R.shape[1])
    sim = _abs_corr(R, C)
    rows, cols = linear_sum_assignment(-sim)
    # rows come sorted when n_ref <= n_components; keep the reference order
    order = np.empty(len(rows), dtype=int)
    order[rows] = cols
    n = len(rows)
    signs = np.sign(np.einsum("ij,ij->i", R[:n], C[order]))
    signs[signs == 0] = 1.0
    return order, signs, sim[np.arange(n), order]


def pairwise_dice(components_list, threshold=0.0, match=True):
    """Pairwise Dice indices between loadings fitted on different folds.

    For every pair ``(i, j)``, ``i < j``, of fits, the components of fit
    ``j`` are matched to those of fit ``i`` with :func:`match_components`
    (unless ``match=False``: then component k is paired with component k) and
    the Dice index (:func:`dice_index`) of each matched pair of supports is
    computed. The paper's stability score is the mean of these values.

    Parameters
    ----------
    components_list : list of array-like (n_components, n_features) or estimators
        At least two fits.
    threshold : float, default=0.0
        Support threshold, see :func:`dice_index`.
    match : bool, default=True

    Returns
    -------
    dice : ndarray of shape (n_pairs, n_components)
        Rows in the order ``(0, 1), (0, 2), ..., (1, 2), ...``; ``n_pairs =
        n_fits (n_fits - 1) / 2``. ``dice.mean()`` is the mean pairwise Dice.
    """
    comps = [check_components(c, f"components_list[{i}]") for i, c in enumerate(components_list)]
    if len(comps) < 2:
        raise ValueError(f"components_list needs at least 2 fits, got {len(comps)}.")
    shape = comps[0].shape
    for i, c in enumerate(comps):
        if c.shape != shape:
            raise ValueError(
                f"components_list[{i}] has shape {c.shape}, expected {shape} (all fits "
                "must have the same number of components and features)."
            )
    rows = []
    for i in range(len(comps)):
        for j in range(i + 1, len(comps)):
            order = match_components(comps[i], comps[j])[0] if match else np.arange(shape[0])
            rows.append(
                [dice_index(comps[i][k], comps[j][order[k]], threshold) for k in range(shape[0])]
            )
    return np.asarray(rows)


def mse_to_truth(components, truth):
    """Squared error between estimated and true loadings, after alignment.

    Components are matched to the true patterns with
    :func:`match_components`, both are scaled to unit Euclidean norm and the
    estimate's sign is aligned with the truth; the score is the mean over
    the true components of the squared distance,

    .. math::

        \\mathrm{MSE} = \\frac1K \\sum_k \\left\\| \\frac{t_k}{\\|t_k\\|}
        - s_k \\frac{c_{\\pi(k)}}{\\|c_{\\pi(k)}\\|} \\right\\|_2^2
        = \\frac1K \\sum_k 2 (1 - |\\cos(t_k, c_{\\pi(k)})|),

    in [0, 2] (0: perfect recovery; a zero component scores 2). It is
    invariant to the order, sign and scale of the components, which no
    sparse PCA method identifies.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or estimator
    truth : array-like of shape (n_true, n_features)
        ``n_true <= n_components``.

    Returns
    -------
    float
    """
    T = check_matrix(truth, "truth")
    C = check_matrix(check_components(components), "components", T.shape[1])
    if C.shape[0] < T.shape[0]:
        raise ValueError(f"components has {C.shape[0]} rows, fewer than truth ({T.shape[0]}).")
    if np.any(np.linalg.norm(T, axis=1) == 0):
        raise ValueError("truth has a zero row: every true pattern must be non-zero.")
    order, _, sim = match_components(T, C)
    return float(np.mean(2.0 * (1.0 - sim)))


def sparsity_rule(components, indices=(1, 2), min_zero_fraction=0.5):
    """The paper's sparsity criterion: enough exact zeros in some components.

    Section III: "at least half of the features of the second and third
    components have to be zero" (``indices=(1, 2)``, 0-based). Indices past
    the number of components are ignored.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or estimator
    indices : sequence of int, default=(1, 2)
    min_zero_fraction : float, default=0.5

    Returns
    -------
    bool
    """
    C = check_components(components)
    if not 0 <= min_zero_fraction <= 1:
        raise ValueError(f"min_zero_fraction must be in [0, 1], got {min_zero_fraction!r}.")
    rows = [k for k in indices if k < C.shape[0]]
    return bool(all(np.mean(C[k] == 0) >= min_zero_fraction for k in rows))


def sign_permutation_test(differences, n_permutations=1000, random_state=0):
    """Sign-flip permutation test of a mean paired difference (two-sided).

    Under the null, each difference is as likely positive as negative; the
    signs are flipped at random ``n_permutations`` times and the p-value is

    .. math::

        p = \\frac{1 + \\#\\{b : |\\bar d^{(b)}| \\ge |\\bar d|\\}}{1 + B}.

    This is how the paper tests Dice differences (section III), since the
    pairwise Dice values are not independent.

    Parameters
    ----------
    differences : array-like of shape (n,)
    n_permutations : int, default=1000
    random_state : int, default=0

    Returns
    -------
    statistic : float
        The observed mean difference.
    pvalue : float
    """
    d = np.asarray(differences, dtype=np.float64).ravel()
    if d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError("differences must be a non-empty array of finite values.")
    check_int(n_permutations, "n_permutations", minimum=1)
    rng = np.random.default_rng(random_state)
    observed = float(d.mean())
    signs = rng.choice(np.array([-1.0, 1.0]), size=(int(n_permutations), d.size))
    null = (signs * d).mean(axis=1)
    count = int(np.sum(np.abs(null) >= abs(observed) - 1e-12 * max(abs(observed), 1.0)))
    return observed, (1.0 + count) / (1.0 + n_permutations)


def corrected_stability(components_list):
    """Chance-corrected pairwise Dice stability of the supports across fits.

    For every pair of fits, after matching (:func:`match_components`), each
    pair of supports with non-zero fractions ``f1, f2`` has Dice ``D`` and
    chance Dice ``E = 2 f1 f2 / (f1 + f2)`` (two random supports of those
    sizes); the corrected value is ``(D - E) / (1 - E)`` (1: identical, 0: as
    random). Dense supports are trivially "stable" under the raw Dice
    (two 95 % supports overlap by chance); the correction removes that.

    Parameters
    ----------
    components_list : list of array-like (n_components, n_features)

    Returns
    -------
    ndarray of shape (n_pairs, n_components)
    """
    comps = [check_components(c, f"components_list[{i}]") for i, c in enumerate(components_list)]
    if len(comps) < 2:
        raise ValueError(f"components_list needs at least 2 fits, got {len(comps)}.")
    rows = []
    for i in range(len(comps)):
        for j in range(i + 1, len(comps)):
            order = match_components(comps[i], comps[j])[0]
            row = []
            for k in range(len(order)):
                a, b = comps[i][k] != 0, comps[j][order[k]] != 0
                f1, f2 = a.mean(), b.mean()
                if f1 + f2 == 0:
                    row.append(0.0)
                    continue
                d = dice_index(comps[i][k], comps[j][order[k]])
                e = 2.0 * f1 * f2 / (f1 + f2)
                row.append((d - e) / (1.0 - e) if e < 1 else 0.0)
            rows.append(row)
    return np.asarray(rows)


def dice_to_truth(components, truth, threshold=0.0):
    """Mean Dice index between matched estimated and true supports.

    Components are matched to the true patterns with :func:`match_components`;
    the support of a true pattern is its non-zero entries.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features) or estimator
        Estimated loadings as rows, or a fitted estimator with ``components_``.
    truth : array-like of shape (n_true, n_features)
        The true patterns, ``n_true <= n_components``.
    threshold : float, default=0.0
        Support threshold of the estimate, see :func:`dice_index`.

    Returns
    -------
    float in [0, 1]
        The mean over the true patterns of the Dice index of the supports.
    """
    T = check_matrix(truth, "truth")
    C = check_matrix(check_components(components), "components", T.shape[1])
    order = match_components(T, C)[0]
    return float(np.mean([dice_index(C[order[k]], T[k], threshold) for k in range(len(order))]))


def check_sparsity_rule(min_zero_fraction, sparse_indices, n_components=None):
    """Validate the settings of the sparsity rule; the indices as a tuple of ints.

    Parameters
    ----------
    min_zero_fraction : float
        In [0, 1].
    sparse_indices : sequence of int
        Non-negative; when ``n_components`` is given (the rule is the one
        that chooses), non-empty and below ``n_components`` (an index past the
        last component would be skipped, and the rule pass vacuously).
    n_components : int, optional

    Returns
    -------
    tuple of int

    Raises
    ------
    TypeError, ValueError
        Naming ``min_zero_fraction`` or ``sparse_indices``.
    """
    if isinstance(min_zero_fraction, bool) or not isinstance(
        min_zero_fraction, (int, float, np.number)
    ):
        raise TypeError(f"min_zero_fraction must be a number in [0, 1], got {min_zero_fraction!r}.")
    if not 0 <= float(min_zero_fraction) <= 1:  # NaN fails too
        raise ValueError(f"min_zero_fraction must be in [0, 1], got {min_zero_fraction!r}.")
    try:
        indices = tuple(sparse_indices)
    except TypeError:
        raise TypeError(
            f"sparse_indices must be a sequence of ints, got {sparse_indices!r}."
        ) from None
    if any(
        isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in indices
    ) or (not indices and n_components is not None):
        raise ValueError(
            f"sparse_indices must be a {'non-empty ' if n_components else ''}"
            f"sequence of component indices >= 0, got {sparse_indices!r}."
        )
    if isinstance(n_components, (int, np.integer)) and max(indices) >= n_components:
        raise ValueError(
            f"sparse_indices {sparse_indices!r} name components past the "
            f"last of n_components={n_components} (0-based indices); the "
            "sparsity rule would check nothing."
        )
    return tuple(int(k) for k in indices)
