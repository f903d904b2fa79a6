"""``neurospca demo``: SPCA-TV on built-in simulated fMRI maps, with a report."""

import time

import numpy as np

from .._utils.docs import fill_doc
from ._checks import say
from ._fitting import estimator_from_args, fit_with_progress, load_maps
from ._outputs import run_metadata, write_all

__all__ = ["run_demo", "DEMO_VOXEL_SIZE"]

#: voxel edge (mm) of the demo's grid: nilearn's MNI152 mask sampled at 5 mm (13,682
#: voxels), where the default fit takes about a third of its time at 3 mm (64,030)
DEMO_VOXEL_SIZE = 5


@fill_doc
def run_demo(args):
    """Simulate fMRI-like maps in the MNI152 mask (5 mm), fit, print a table, write outputs.

    Parameters
    ----------
    %(command_args)s

    Returns
    -------
    %(exit_code)s
    """
    import importlib.util

    import nibabel as nib

    from ..datasets import make_fmri_like, mni152_brain_mask
    from ..reporting import start_warm_up

    if importlib.util.find_spec("nilearn") is None:  # the masker and the report
        raise ImportError('the demo needs nilearn: pip install "neurospca[report]"')
    say(
        args,
        "neurospca demo: simulated fMRI-like maps in the MNI152 brain mask at "
        f"{DEMO_VOXEL_SIZE} mm (seed {args.seed})",
    )
    t0 = time.perf_counter()
    if getattr(args, "report_worker", None) is None:  # else the worker prepares the report
        start_warm_up(volume=True)  # the report's imports and template, while this runs
    X, patterns, mask = make_fmri_like(random_state=args.seed, voxel_size=DEMO_VOXEL_SIZE)
    affine = mni152_brain_mask(DEMO_VOXEL_SIZE)[1]  # nilearn's 3 mm mask (package data), sampled
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), affine)
    # the maps as a 4-D image, as users have them (NIfTI's Fortran order)
    data = np.zeros(mask.shape + (X.shape[0],), dtype=np.float32, order="F")
    data[mask] = X.T
    imgs = nib.Nifti1Image(data, affine)
    del data
    say(
        args,
        f"{X.shape[0]} maps x {X.shape[1]:,} voxels generated in {time.perf_counter() - t0:.1f} s",
    )
    model = estimator_from_args(args, mask=mask_img)
    model = fit_with_progress(args, model, load_maps(args, model, imgs, "demo"))
    estimator = model.estimator_
    truth = patterns > 0.05
    support = getattr(estimator, "certified_support_", estimator.components_ != 0)
    print(
        "component  support  explained var.  best Dice vs truth  certified gap "
        "(support: certified non-zero loadings)"
    )
    for k in range(estimator.n_components):
        s = support[k]
        dice = max(2 * np.sum(s & t) / max(s.sum() + t.sum(), 1) for t in truth)
        print(
            f"{k + 1:9d}  {s.sum():7d}  {estimator.explained_variance_ratio_[k]:14.4f}  "
            f"{dice:18.3f}  {estimator.dual_gaps_[k]:13.3e}"
        )
    labels = [f"sim_{i:03d}" for i in range(X.shape[0])]
    data = {
        "data set": "simulated fMRI-like maps (neurospca.datasets.make_fmri_like, "
        f"seed {args.seed}): three Gaussian blobs plus noise",
        "mask": f"nilearn MNI152 brain mask, sampled at {DEMO_VOXEL_SIZE} mm",
    }
    write_all(
        args,
        estimator,
        model.space_,
        meshes=None,
        metadata=run_metadata(args, "neurospca demo: SPCA-TV on simulated fMRI maps", data),
        sample_labels=labels,
    )
    say(args, f"total {time.perf_counter() - t0:.1f} s")
    return 0
