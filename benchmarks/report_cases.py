"""Reports of fixed fits, written to a folder: run in two trees and compare the HTML.

Used for issue 23 (the report as section builders): the same fits, reported by
the old and the new ``make_report``, must give the same page (up to the
generation time and the timings table).

    PYTHONPATH=<tree> python benchmarks/report_cases.py OUT_DIR
    python benchmarks/report_cases.py --compare OLD_DIR NEW_DIR
"""

import base64
import os
import re
import sys
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402


def _volume():
    from neurospca import SPCATV, VolumeMasker

    mask = np.zeros((14, 16, 12), dtype=bool)
    mask[1:13, 1:15, 1:11] = True
    affine = np.array([[-3.0, 0, 0, 30.0], [0, 3.0, 0, -40.0], [0, 0, 3.0, -10.0], [0, 0, 0, 1]])
    masker = VolumeMasker(nib.Nifti1Image(mask.astype(np.uint8), affine))
    ijk = np.argwhere(mask)
    patterns = [np.exp(-((ijk - c) ** 2).sum(1) / 2.0) for c in ([4, 5, 4], [9, 11, 7])]
    rng = np.random.default_rng(11)
    X = (rng.standard_normal((40, 2)) * [3, 2]) @ np.array(patterns)
    X += 0.2 * rng.standard_normal(X.shape)
    model = SPCATV(
        2,
        alpha=None,
        alpha_rel=0.5,
        l1_ratio=0.1,
        tv_ratio=0.2,
        operator=masker.operator(),
        tol=1e-3,
    ).fit(X)
    return model, masker, X, affine


def _surface():
    from neurospca import SPCATV, icosphere, tv_from_hemispheres
    from neurospca.reporting import surface_background

    coords, faces = icosphere(3)
    keep = coords[:, 2] > -0.8
    op, hemis = tv_from_hemispheres((coords, faces), (coords, faces), keep, keep)
    rng = np.random.default_rng(1)
    full = np.exp(-((coords - [1, 0, 0]) ** 2).sum(1) / 0.1)
    pattern = np.concatenate([full[keep], np.zeros(keep.sum())])
    pattern2 = np.concatenate([np.zeros(keep.sum()), full[keep]])
    X = (rng.standard_normal((20, 2)) * [3, 2]) @ np.array([pattern, pattern2])
    X += 0.3 * rng.standard_normal(X.shape)
    model = SPCATV(2, alpha=0.2, operator=op, tol=1e-2).fit(X)
    meshes = {
        "left": (coords, faces),
        "right": (coords + [3, 0, 0], faces),
        "bg_left": surface_background(coords, faces),
    }
    return model, hemis, meshes


SELECTION = SimpleNamespace(
    best_params_={"alpha_rel": 0.5, "tv_ratio": 0.2},
    rule="one-standard-error",
    component_stability_=np.array([0.93, 0.71]),
    results_=[
        {
            "params": {"alpha_rel": a, "tv_ratio": 0.2},
            "mean_score": -a,
            "std_score": 0.1,
            "stability": 0.5 + a / 10,
            "zero_fraction": 0.8,
        }
        for a in (0.25, 0.5, 1.0)
    ],
)


def _study(scores):
    from neurospca.study import associations

    n = scores.shape[0]
    rng = np.random.default_rng(3)
    groups = {"dx": np.array(["CN", "AD"] * (n // 2))}
    covariates = {"age": rng.uniform(60, 80, n)}
    assoc = associations(scores, groups, covariates, n_permutations=99, random_state=0)
    return {
        "participant_ids": [f"sub-{i:02d}" for i in range(n)],
        "groups": groups,
        "covariates": covariates,
        "associations": {c: assoc[c].tolist() for c in assoc.columns},
        "methods": ["Scores were tested against diagnosis and age."],
        "n_permutations": 99,
    }


def cases():
    """(name, callable returning the HTML) of every report compared."""
    model, masker, X, affine = _volume()
    bg = nib.Nifti1Image(masker.mask.astype(np.float32), affine)
    yield from _volume_cases(model, masker, bg, affine)
    yield from _surface_cases()
    yield from _estimator_cases(masker, X, bg)
    yield from _image_cases()


def _image_cases():
    """ImageSPCATV.generate_report of a small 4-D image (what users call)."""
    from neurospca import ImageSPCATV

    rng = np.random.default_rng(12)
    shape = (11, 13, 9)
    affine = np.array([[3.0, 0, 0, -15], [0, 2.5, 0, -20], [0, 0, 3.5, -10], [0, 0, 0, 1]])
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [5, 6, 4]) ** 2 / [25, 36, 16]).sum(-1) < 1.0
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 3.0) for c in ([3, 4, 4], [7, 8, 4])]
    data = (
        3 * rng.standard_normal((16, 1, 1, 1)) * blobs[0]
        + 2 * rng.standard_normal((16, 1, 1, 1)) * blobs[1]
        + 0.2 * rng.standard_normal((16,) + shape)
    )
    img = nib.Nifti1Image(np.moveaxis(data, 0, -1).astype(np.float32), affine)
    mask_img = nib.Nifti1Image(mask.astype(np.uint8), affine)
    model = ImageSPCATV(2, mask=mask_img, alpha_rel=0.5, tol=1e-2).fit(img)
    yield "image_volume", lambda: model.generate_report(title="ImageSPCATV").html


def _volume_cases(model, masker, bg, affine):
    from neurospca.reporting import component_scores, make_report

    labels = np.zeros(masker.mask.shape, dtype=np.int16)
    labels[:7], labels[7:] = 1, 2
    atlas = nib.Nifti1Image(labels, affine)
    evidence = {
        "observed": [0.4, 0.3, 0.1, 0.05],
        "null": [0.2, 0.15, None, 0.1],
        "n_components": 2,
        "quantile": 0.95,
        "rule": "parallel analysis <rule>",
    }
    yield (
        "volume_full",
        lambda: make_report(
            model,
            masker,
            atlas=atlas,
            atlas_labels=["background", "Anterior <a>", "Posterior"],
            bg_img=bg,
            selection=SELECTION,
            command="neurospca fit maps/*.nii.gz <x>",
            data_description={"inputs": "40 maps"},
            study=_study(component_scores(model)),
            n_components_evidence=evidence,
            title="Full <report>",
        ),
    )
    yield (
        "volume_meta",
        lambda: make_report(
            model,
            masker,
            bg_img=bg,
            metadata={"command": "neurospca fit a b", "n_components_evidence": evidence},
            max_clusters=1,
            cluster_connectivity=6,
        ),
    )
    yield "plain", lambda: make_report(model)


def _surface_cases():
    from neurospca.reporting import make_report

    surf, hemis, meshes = _surface()
    yield "surface_mpl", lambda: make_report(surf, hemis, meshes=meshes, engine="matplotlib")
    yield (
        "surface_coords",
        lambda: make_report(
            surf,
            hemis,
            meshes=meshes,
            engine="matplotlib",
            surface_coords=(meshes["left"][0] * 50, meshes["right"][0] * 50),
        ),
    )
    yield "surface_nomesh", lambda: make_report(surf, hemis)
    yield "surface_pyvista", lambda: make_report(surf, hemis, meshes=meshes, engine="pyvista")


#: what an SPCATV model saved by an older version lacks
_NEWER_ATTRIBUTES = (
    "penalty_weights_",
    "certified_support_",
    "rel_gaps_",
    "rel_gap_history_",
    "pca_explained_variance_ratio_",
    "stability_",
    "n_uncertain_",
)


def _estimator_cases(masker, X, bg):
    from neurospca import (
        SPCATV,
        SSPCA,
        HierarchicalDictionaryLearning,
        KTraceNormPCA,
        NonnegativeSparsePCA,
        balanced_tree,
    )
    from neurospca.reporting import make_report

    sspca = SSPCA(2, random_state=0, max_iter=5).fit(X[:, :60])
    yield "sspca_volume", lambda: make_report(sspca, title="SSPCA")
    nspca = NonnegativeSparsePCA(2, random_state=0).fit(np.abs(X))
    yield "nspca_volume", lambda: make_report(nspca, masker, bg_img=bg)
    ktrace = KTraceNormPCA(2, random_state=0).fit(X)
    yield "ktrace_volume", lambda: make_report(ktrace, masker, bg_img=bg)
    tree = balanced_tree([1, 2])
    hdl = HierarchicalDictionaryLearning(tree, n_components=3, random_state=0)
    hdl.fit(np.abs(X[:, :15]))
    yield "hdl_plain", lambda: make_report(hdl)
    chain = SPCATV(1, alpha=0.05, tol=1e-2).fit(np.random.default_rng(0).standard_normal((15, 600)))
    yield "chain", lambda: make_report(chain)
    old = SPCATV(2, alpha=0.3, operator=masker.operator(), tol=1e-2).fit(X)
    for name in _NEWER_ATTRIBUTES:
        if hasattr(old, name):
            delattr(old, name)
    yield "old_model", lambda: make_report(old, masker, bg_img=bg, selection=SELECTION)


def _normalise(html):
    """Generation time and the timings table out; figures by their decoded pixels."""
    html = re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated <time>", html)
    html = re.sub(r'<section id="timings">.*?</section>', "<timings>", html, flags=re.S)
    # the convergence table's last column: each component's fit time (s)
    conv = re.search(r'<section id="convergence">.*?</section>', html, flags=re.S)
    if conv:
        rows = re.sub(r'<td class="num">[0-9.]+</td></tr>', "<td>time</td></tr>", conv.group(0))
        html = html[: conv.start()] + rows + html[conv.end() :]
    return html


def _images(html):
    return re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)


def compare(old_dir, new_dir):
    """Print, per case, whether the pages are the same text and the same images."""
    from io import BytesIO

    from PIL import Image

    same = True
    for name in sorted(os.listdir(old_dir)):
        old = open(os.path.join(old_dir, name), encoding="utf-8").read()
        new = open(os.path.join(new_dir, name), encoding="utf-8").read()
        strip = lambda h: re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "<png>", h)  # noqa: E731
        text_same = strip(_normalise(old)) == strip(_normalise(new))
        imgs_o, imgs_n = _images(old), _images(new)
        pix_same = len(imgs_o) == len(imgs_n) and all(
            np.array_equal(
                np.asarray(Image.open(BytesIO(base64.b64decode(a)))),
                np.asarray(Image.open(BytesIO(base64.b64decode(b)))),
            )
            for a, b in zip(imgs_o, imgs_n, strict=True)
        )
        bytes_same = _normalise(old) == _normalise(new)
        same &= text_same and pix_same
        print(
            f"{name:20s} text {'same' if text_same else 'DIFFERENT'}; {len(imgs_o)} images "
            f"{'same pixels' if pix_same else 'DIFFERENT'}; whole page (base64 included) "
            f"{'identical' if bytes_same else 'differs'}"
        )
    return same


def main(argv):
    if argv[0] == "--compare":
        return 0 if compare(argv[1], argv[2]) else 1
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    for name, make in cases():
        with open(os.path.join(out, f"{name}.html"), "w", encoding="utf-8") as fh:
            fh.write(make())
        print(name, "written", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
