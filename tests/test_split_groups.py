"""Issue 20 round 9: ``split_groups``, rows that every split half keeps whole."""

import argparse
import warnings

import nibabel as nib
import numpy as np
import pytest
from sklearn.utils import check_random_state

from neurospca import SPCATV, tv_from_mask
from neurospca.decomposition import overlapping_subsamples, split_halves
from neurospca.decomposition._split_groups import (
    check_split_groups,
    group_blocks,
    group_halves,
    half_rows,
    permute_groups,
)
from neurospca.decomposition._stability import SERIES_CORRELATION, serial_correlation

OP = tv_from_mask(np.ones((12, 12), dtype=bool))


def _fit(X, split_groups=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SPCATV(2, operator=OP, random_state=0, **kw).fit(X, split_groups=split_groups)


def _sessions(seed, strength):
    """60 subjects, two near-identical sessions each (rows 2i, 2i + 1)."""
    rng = np.random.default_rng(seed)
    pattern = np.zeros((12, 12))
    pattern[2:6, 2:6] = 1.0
    X0 = strength * rng.standard_normal((60, 1)) * pattern.ravel()
    X0 = X0 + rng.standard_normal((60, 144))
    subject = np.repeat(np.arange(60), 2)
    return X0[subject] + 0.1 * rng.standard_normal((120, 144)), subject, pattern.ravel()


@pytest.mark.parametrize(
    "bad, error, words",
    [
        (np.arange(119), ValueError, "one label per row"),
        (np.zeros(120), ValueError, "at least two groups"),
        (np.r_[np.zeros(61), np.arange(1, 60)], ValueError, "more than half"),
        (np.r_[np.nan, np.arange(119.0)], ValueError, "missing label"),
        (np.array([None] + list(range(119)), dtype=object), ValueError, "missing label"),
        (np.arange(240).reshape(120, 2), ValueError, "one label per row"),
        (1, ValueError, "between 2 and 120 blocks"),
        (121, ValueError, "between 2 and 120 blocks"),
        (True, TypeError, "split_groups"),
        (2.5, TypeError, "split_groups"),
        ("rows", ValueError, "'blocks'"),
    ],
)
def test_bad_split_groups_name_the_argument(bad, error, words):
    X = np.random.default_rng(0).standard_normal((120, 144))
    model = SPCATV(2, operator=OP)
    with pytest.raises(error, match="split_groups") as info:
        model.fit(X, split_groups=bad)
    assert words in str(info.value)
    assert not hasattr(model, "components_") and not hasattr(model, "_split_groups")


def test_halves_keep_every_group_whole_and_are_balanced():
    rng = np.random.default_rng(1)
    labels = np.repeat([f"sub-{i}" for i in range(50)], rng.integers(2, 5, size=50))
    rng.shuffle(labels)  # sessions anywhere in the table
    groups = check_split_groups(labels, labels.size)
    a, b = half_rows(groups, 0)
    assert np.intersect1d(a, b).size == 0 and a.size + b.size == labels.size
    assert not set(labels[a]) & set(labels[b])
    assert abs(a.size - b.size) <= 4  # the largest group
    blocks = check_split_groups("blocks", 652)
    a, b = half_rows(blocks, 3)
    assert len(np.unique(blocks[a])) == len(np.unique(blocks[b])) == 5
    assert {a.size, b.size} <= {325, 326, 327}


def test_independent_rows_keep_the_halves_and_subsamples_of_round_8():
    """No groups: the same random halves (the permutation formula of round 8) and
    the same subsamples; ``"blocks"`` of 10 gives the subsamples' own blocks."""
    X = np.random.default_rng(2).standard_normal((101, 7))
    idx = check_random_state(5).permutation(101)
    A, B = split_halves(X, 5)
    np.testing.assert_array_equal(A, X[np.sort(idx[:50])])
    np.testing.assert_array_equal(B, X[np.sort(idx[50:100])])
    for seed in (0, 7):
        plain = overlapping_subsamples(101, seed)
        blocks = overlapping_subsamples(101, seed, check_split_groups("blocks", 101))
        for p, q in zip(plain, blocks, strict=True):
            np.testing.assert_array_equal(p, q)


def test_default_fit_is_unchanged_by_split_groups_none():
    X, _, _ = _sessions(3, 2.0)
    plain = _fit(X[::2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = SPCATV(2, operator=OP, random_state=0).fit(X[::2])  # no keyword at all
    for m in (plain, old):
        assert m.split_groups_ == "random rows"
    np.testing.assert_array_equal(plain.components_, old.components_)
    np.testing.assert_array_equal(plain.stability_, old.stability_)
    for p, q in zip(plain.auto_path_, old.auto_path_, strict=True):
        np.testing.assert_array_equal(p["reproducibility"], q["reproducibility"])


def test_sessions_noise_is_flagged_with_the_subjects_as_groups_or_as_a_series():
    """Two near-identical sessions per subject: random halves hold both sessions of
    most subjects and a noise component reproduced (``stability_`` 0.5 and more
    before issue 20 round 13). With the sessions next to each other (rows 2i,
    2i + 1) the rows are a series, scored on contiguous blocks (round 13), and
    with the subjects as groups (halves and noise floor): every noise component
    is flagged either way."""
    X, subject, _ = _sessions(3, 0.0)
    assert serial_correlation(X) > SERIES_CORRELATION
    assert np.all(_fit(X).stability_ < 0.5)
    grouped = _fit(X, subject)
    assert grouped.split_groups_ == "60 contiguous blocks of rows"
    assert np.all(grouped.stability_ < 0.5)
    labels = np.array([f"sub-{s:02d}" for s in subject])[::-1]  # strings, any order
    assert np.all(_fit(X[::-1], labels).stability_ < 0.5)


def test_a_planted_pattern_still_reproduces_with_the_subjects_as_groups():
    X, subject, pattern = _sessions(3, 2.0)
    m = _fit(X, subject)
    k = int(np.argmax(np.abs(m.components_ @ pattern)))
    cos = abs(m.components_[k] @ pattern) / np.linalg.norm(pattern)
    assert cos > 0.9 and m.stability_[k] > 0.9


def test_the_noise_floor_moves_whole_groups():
    groups = check_split_groups(np.repeat(np.arange(7), [2, 2, 3, 3, 3, 2, 1]), 16)
    X = np.arange(16 * 5, dtype=float).reshape(16, 5) + 1000 * np.arange(5)
    out = permute_groups(X, groups, np.random.default_rng(0), np.empty_like(X), width=2)
    moved = False
    for j in range(5):
        np.testing.assert_array_equal(np.sort(out[:, j]), X[:, j])
        for g in range(7):
            rows = np.flatnonzero(groups == g)
            src = [np.flatnonzero(groups == h) for h in range(7)]
            same = [h for h in range(7) if np.array_equal(out[rows, j], X[src[h], j])]
            assert same and np.sum(groups == same[0]) == rows.size  # a whole group
            moved |= same[0] != g
    assert moved
    np.testing.assert_array_equal(out[groups == 6], X[groups == 6])  # its size is unique


def test_blocks_of_whole_groups_for_the_subsamples():
    blocks = group_blocks(check_split_groups("blocks", 652), 10)
    for got, ref in zip(blocks, np.array_split(np.arange(652), 10), strict=True):
        np.testing.assert_array_equal(got, ref)
    labels = np.random.default_rng(3).permutation(np.repeat(np.arange(40), 3))
    groups = check_split_groups(labels, 120)
    blocks = group_blocks(groups, 10)
    assert sorted(np.concatenate(blocks).tolist()) == list(range(120))
    for i, b in enumerate(blocks):  # no group in two blocks
        assert all(set(groups[b]).isdisjoint(groups[c]) for c in blocks[i + 1 :])
    assert group_blocks(check_split_groups(np.repeat(np.arange(4), 30), 120), 10) is None


def test_a_fixed_penalty_with_few_groups_fits_two_halves():
    X, _, _ = _sessions(3, 2.0)
    sites = np.repeat(np.arange(4), 30)
    with pytest.warns(UserWarning, match="across split halves"):
        SPCATV(2, operator=OP, random_state=0, alpha_rel=1.0, stability=True).fit(
            X, split_groups=sites
        )


def test_out_of_core_halves_of_whole_groups(tmp_path):
    X = np.random.default_rng(4).standard_normal((40, 6))
    groups = check_split_groups("blocks", 40)
    mm = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", shape=X.shape)
    mm[:] = X
    a, b = half_rows(groups, 0)
    for half, rows in zip(group_halves(mm, groups, 0), (a, b), strict=True):
        assert type(half) is np.ndarray
        np.testing.assert_array_equal(half, X[rows])
    da = pytest.importorskip("dask.array")
    for half, rows in zip(
        group_halves(da.from_array(X, chunks=(8, 6)), groups, 0), (a, b), strict=True
    ):
        assert hasattr(half, "dask")
        np.testing.assert_array_equal(half.compute(), X[rows])


def _run(n, tr=2.0, units=("mm", "sec")):
    data = np.random.default_rng(5).standard_normal((5, 5, 4, n)).astype(np.float32)
    img = nib.Nifti1Image(data, np.eye(4))
    img.header.set_xyzt_units(*units)
    img.header.set_zooms((1.0, 1.0, 1.0, tr))
    return img


def test_image_time_series_gets_blocks_and_stacked_maps_do_not(capsys):
    pytest.importorskip("nilearn")
    from nilearn.image import concat_imgs

    from neurospca import ImageSPCATV

    mask = nib.Nifti1Image(np.ones((5, 5, 4), np.uint8), np.eye(4))
    run = _run(40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ImageSPCATV(2, mask=mask, random_state=0).fit(run)
        assert m.estimator_.split_groups_ == "10 contiguous blocks of rows"
        assert "time series (40 volumes, TR 2 sec)" in capsys.readouterr().out
        header = nib.Nifti1Header()
        header.set_xyzt_units("mm", "sec")  # as SPM / FSL write 3-D maps
        maps = [nib.Nifti1Image(run.get_fdata()[..., i], np.eye(4), header) for i in range(40)]
        stacked = concat_imgs(maps)
        assert stacked.header.get_xyzt_units()[1] == "sec"
        s = ImageSPCATV(2, mask=mask, random_state=0).fit(stacked)
        assert s.estimator_.split_groups_ == "random rows"
        off = ImageSPCATV(2, mask=mask, random_state=0).fit(run, split_groups=None)
        np.testing.assert_array_equal(off.components_, s.components_)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "img, expected",
    [
        (_run(40), True),
        (_run(40, tr=720.0, units=("mm", "msec")), True),
        (_run(40, tr=1.0), False),  # the filler of stacked 3-D maps
        (_run(40, units=("mm", "unknown")), False),
        (_run(12), False),  # too few volumes for blocks
    ],
)
def test_time_series_header(img, expected):
    from neurospca.image._time_series import is_time_series

    assert is_time_series(img) is expected


def test_other_estimators_refuse_split_groups():
    from neurospca import SSPCA
    from neurospca.image import ImageSPCATV, image_split_groups

    model = ImageSPCATV(estimator=SSPCA(2))
    with pytest.raises(ValueError, match="split_groups: SSPCA draws no split halves"):
        image_split_groups(model, _run(40), "blocks")
    assert image_split_groups(model, _run(40)) is None  # "auto": no guess for it
    X = np.random.default_rng(0).standard_normal((20, 12))
    with pytest.raises(ValueError, match="split_groups: SSPCA draws no split halves"):
        SSPCA(2).fit(X, split_groups="blocks")
    assert not hasattr(SSPCA(2, alpha=1e-7).fit(X), "split_groups_")


def test_command_line_split_blocks():
    from neurospca._commands._checks import UserError
    from neurospca._commands._fitting import split_groups_from_args
    from neurospca.cli import _build_parser
    from neurospca.image import ImageSPCATV

    args = _build_parser().parse_args(
        ["fit", "--images", "x.nii", "--mask", "m.nii", "--split-blocks", "8"]
    )
    assert split_groups_from_args(args, ImageSPCATV(), ["x.nii"]) == 8
    with pytest.raises(UserError, match="--split-blocks"):
        split_groups_from_args(argparse.Namespace(split_blocks=1), ImageSPCATV(), None)
    assert split_groups_from_args(argparse.Namespace(), ImageSPCATV(), None) is None


def test_methods_paragraph_says_how_the_samples_were_resampled():
    from neurospca.reporting._methods import _stability_sentence

    stab = np.array([0.9, 0.3])
    text = _stability_sentence(stab, "10 contiguous blocks of rows")
    assert "resampled as 10 contiguous blocks of rows" in text and "component(s) 2" in text
    assert "resampled as" not in _stability_sentence(stab, "random rows")
