"""The number of components from evidence: parallel_analysis's edge null (issue 21, item 4)."""

import warnings

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter

from neurospca.model_selection import parallel_analysis


def _smooth_images(seed, n=100, side=50, sigma=2.0, planted=3):
    """n images (side x side) of spatially smooth noise (Gaussian filter, sigma pixels) plus
    a little white noise, and ``planted`` Gaussian blobs with independent scores."""
    rng = np.random.default_rng(seed)
    Z = gaussian_filter(rng.standard_normal((n, side, side)), (0, sigma, sigma), mode="wrap")
    X = (Z / Z.std()).reshape(n, -1) + 0.5 * rng.standard_normal((n, side * side))
    yy, xx = np.mgrid[:side, :side]
    centres = [(12, 12), (12, 37), (37, 25)][:planted]
    for (a, b), amp in zip(centres, (3.0, 2.5, 2.0)[:planted], strict=True):
        blob = np.exp(-((yy - a) ** 2 + (xx - b) ** 2) / 32.0).ravel()
        X += np.outer(amp * rng.standard_normal(n), blob)
    return X


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_counts_planted_components_in_smooth_noise(seed):
    """3 blobs in spatially smooth noise: the edge null finds 3; Horn's permutations and the
    two-moment Gaussian null (the former default) count smooth noise as components."""
    X = _smooth_images(seed)
    k, evidence = parallel_analysis(X, random_state=seed)
    assert k == 3 and evidence["n_above"] == 3, evidence["rule"]
    observed, null = np.array(evidence["observed"]), evidence["null"]
    assert np.all(observed[:3] > np.array(null[:3])) and observed[3] <= null[3]
    assert parallel_analysis(X, null="effective", random_state=seed)[0] >= 6
    assert parallel_analysis(X, null="permutation", random_state=seed)[0] >= 15


def test_pure_smooth_noise_gives_one_with_a_warning():
    X = _smooth_images(0, planted=0)
    with pytest.warns(UserWarning, match="no component exceeds the null.*n_components=1"):
        k, evidence = parallel_analysis(X)
    assert k == 1 and evidence["n_above"] == 0
    assert "none of the first" in evidence["rule"]
    # the former default keeps several ranks of the same noise
    assert parallel_analysis(X, null="effective")[1]["n_above"] >= 3


@pytest.mark.parametrize("rank", [1, 2, 4])
def test_edge_strong_low_rank_signal_in_white_noise(rank):
    """Strong components just below the tested rank do not mask it (calibration skips two)."""
    rng = np.random.default_rng(rank)
    n, p = 80, 1500
    signal = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, p))
    k, evidence = parallel_analysis(0.5 * signal + rng.standard_normal((n, p)))
    assert k == rank, evidence["rule"]


def test_edge_is_deterministic_given_random_state():
    X = _smooth_images(3)
    a = parallel_analysis(X, random_state=7)[1]
    b = parallel_analysis(X, random_state=7)[1]
    c = parallel_analysis(X, random_state=8)[1]
    assert a == b
    assert a["null"] != c["null"]  # the null's draws depend on the seed
    assert a["n_components"] == c["n_components"] == 3


def test_evidence_states_the_rule_and_its_numbers():
    X = _smooth_images(0)
    _, evidence = parallel_analysis(X)
    assert evidence["null_kind"] == "edge" and evidence["quantile"] == 0.99
    assert evidence["n_permutations"] == 200
    assert "99th percentile" in evidence["rule"] and "3 of the first" in evidence["rule"]
    first = f"1: {100 * evidence['observed'][0]:.2f} % vs {100 * evidence['null'][0]:.2f} %"
    assert first in evidence["rule"]


def test_effective_and_permutation_nulls_unchanged():
    """The former nulls keep their defaults (20 draws, 95th percentile) and their numbers."""
    X = _smooth_images(0)
    _, ev = parallel_analysis(X, null="effective")
    assert ev["quantile"] == 0.95 and ev["n_permutations"] == 20
    k, ev = parallel_analysis(X, null="permutation", max_components=5)
    assert ev["quantile"] == 0.95 and k == 5


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"null": "horn"}, ValueError, "null must be one of 'edge', 'effective', 'permutation'"),
        ({"quantile": 1.0}, ValueError, "quantile must be in"),
        ({"quantile": "high"}, TypeError, "quantile must be a float"),
        ({"max_components": 0}, ValueError, "max_components"),
        ({"n_permutations": 2}, ValueError, "n_permutations"),
        ({"n_permutations": 2.5}, TypeError, "n_permutations"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    X = np.random.default_rng(0).standard_normal((30, 50))
    with pytest.raises(error, match=match):
        parallel_analysis(X, **kwargs)


def test_bad_data_is_named():
    X = np.random.default_rng(0).standard_normal((30, 50))
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="X"):
        parallel_analysis(X)
    with pytest.raises(ValueError, match="X: null='edge' needs at least 8 samples"):
        parallel_analysis(np.random.default_rng(0).standard_normal((6, 50)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the other nulls still work on few samples
        assert (
            parallel_analysis(
                np.random.default_rng(0).standard_normal((6, 50)) + np.arange(50),
                null="permutation",
            )[0]
            >= 1
        )


def test_report_section_draws_the_chosen_rule_and_its_threshold():
    import base64
    import io

    from PIL import Image

    from neurospca.reporting import _findings

    _, evidence = parallel_analysis(_smooth_images(0))
    section = _findings.n_components_section(evidence)
    assert section["note"] == evidence["rule"] and "vs" in section["note"]
    png = base64.b64decode(section["image"].split(",", 1)[1])
    assert Image.open(io.BytesIO(png)).size[0] > 200
    # a saved model's metadata is read the same way
    assert _findings.n_components_section(None, {"n_components_evidence": evidence}) == section
