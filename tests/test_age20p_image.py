"""Issue 20, round 16: ImageSPCATV, given the participants table and the sites
harmonised but age left in, names the column the whole-map signal follows."""

import warnings

import pytest

from neurospca import ImageSPCATV
from tests.test_study_images import cohort  # noqa: F401  (the fixture)


@pytest.mark.parametrize("confounds", [None, ["age"]])
def test_the_age_column_is_named_when_left_in(cohort, confounds):  # noqa: F811
    root, _, _ = cohort
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ImageSPCATV(2, random_state=0).fit(
            str(root / "sub-*_thickness.nii.gz"),
            participants=root / "participants.tsv",
            harmonize="site",
            confounds=confounds,
        )
    said = [str(w.message) for w in caught if "participants column" in str(w.message)]
    seen = [p for p in model.auto_path_ if p.get("dense_effect")]
    if confounds is None:
        assert seen and len(said) == 1 and "'age'" in said[0] and "confounds=['age']" in said[0]
    else:
        assert not seen and said == []
