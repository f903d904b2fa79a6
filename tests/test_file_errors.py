"""Truncated or corrupted files of every format: a ValueError naming the argument and file.

Real files are written with nibabel, then cut short, emptied or given a garbage
header; every reader must raise ``ValueError`` (never EOFError, ExpatError,
zlib.error, struct.error...) with the argument name and the path in the message.
"""

import nibabel as nib
import numpy as np
import pytest

import neurospca
from neurospca import icosphere, write_surf_data, write_surf_mesh


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")
    coords, faces = icosphere(1)
    rng = np.random.default_rng(0)
    write_surf_mesh(coords, faces, root / "lh.surf.gii")
    write_surf_mesh(coords, faces, root / "lh.white")
    values = rng.standard_normal((coords.shape[0], 3))
    write_surf_data(values, root / "lh.func.gii")
    write_surf_data(values, root / "lh.data.mgz")
    write_surf_data(values, root / "lh.data.mgh")
    write_surf_data(values[:, 0], root / "lh.thickness")
    labels = (coords[:, 2] > -0.5).astype(np.int32)
    ctab = np.array([[25, 5, 25, 0, 0], [220, 20, 10, 0, 0]], dtype=np.int32)
    nib.freesurfer.write_annot(
        str(root / "lh.aparc.annot"), labels, ctab, [b"unknown", b"cortex"], fill_ctab=True
    )
    kept = np.flatnonzero(labels)
    with open(root / "lh.cortex.label", "w") as fh:
        fh.write(f"#!ascii label\n{kept.size}\n")
        fh.writelines(f"{v} 0.0 0.0 0.0 0.0\n" for v in kept)
    mask = np.zeros((6, 6, 5), dtype=np.uint8)
    mask[1:5, 1:5, 1:4] = 1
    for ext in (".nii.gz", ".nii"):
        nib.Nifti1Image(mask, np.eye(4)).to_filename(root / f"mask{ext}")
        nib.Nifti1Image(
            rng.standard_normal((6, 6, 5, 4)).astype(np.float32), np.eye(4)
        ).to_filename(root / f"img{ext}")
    return root, coords.shape[0]


# (file, call(path, root, n_vertices), argument name)
CASES = {
    "lh.surf.gii": (lambda p, r, n: neurospca.load_surf_mesh(p), "surf"),
    "lh.white": (lambda p, r, n: neurospca.load_surf_mesh(p, "left_mesh"), "left_mesh"),
    "lh.func.gii": (lambda p, r, n: neurospca.load_surf_data(p), "data"),
    "lh.data.mgz": (lambda p, r, n: neurospca.load_surf_data(p), "data"),
    "lh.data.mgh": (lambda p, r, n: neurospca.load_surf_data(p, "right_data"), "right_data"),
    "lh.thickness": (lambda p, r, n: neurospca.load_surf_data(p), "data"),
    "lh.aparc.annot": (lambda p, r, n: neurospca.load_cortex_mask(p), "source"),
    "lh.cortex.label": (
        lambda p, r, n: neurospca.load_cortex_mask(p, n, name="mask_left"),
        "mask_left",
    ),
    "mask.nii.gz": (lambda p, r, n: neurospca.load_mask_img(p), "mask"),
    "mask.nii": (lambda p, r, n: neurospca.VolumeMasker(p), "mask"),
    "img.nii.gz": (lambda p, r, n: neurospca.images_to_data(p, r / "mask.nii.gz"), "imgs"),
    "img.nii": (
        lambda p, r, n: neurospca.images_to_data([r / "img.nii", p], r / "mask.nii"),
        "imgs[1]",
    ),
}


def _damage(raw, how):
    if how == "half":
        return raw[: len(raw) // 2]
    if how == "last_bytes":  # the end of a gzip stream or of the data block is missing
        return raw[:-7]
    if how == "empty":
        return b""
    # garbage header
    return bytes(b ^ 0x5A for b in raw[:64]) + raw[64:]


@pytest.mark.parametrize("how", ["half", "last_bytes", "empty", "header"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_damaged_file_is_a_value_error_naming_argument_and_file(good, tmp_path, name, how):
    root, n = good
    call, arg = CASES[name]
    call(root / name, root, n)  # the intact file reads
    raw = (root / name).read_bytes()
    bad = tmp_path / name
    bad.write_bytes(_damage(raw, how))
    if how == "last_bytes" and name in (
        "img.nii.gz",
        "lh.data.mgz",
        "lh.data.mgh",
        "lh.cortex.label",
    ):
        # the last bytes are a gzip trailer, MGH's optional footer or the end of the last
        # label line: the data are complete, so the file reads (or fails clearly)
        try:
            call(bad, root, n)
        except ValueError as exc:
            assert arg in str(exc) and str(bad) in str(exc)
        return
    with pytest.raises(ValueError) as info:
        call(bad, root, n)
    msg = str(info.value)
    assert arg in msg, msg
    assert str(bad) in msg, msg


def test_lazily_loaded_image_with_damaged_data_is_named(good, tmp_path):
    root, _ = good
    raw = (root / "img.nii.gz").read_bytes()
    bad = tmp_path / "sub-bad.nii.gz"
    bad.write_bytes(raw[: len(raw) // 2])
    img = nib.load(bad)  # lazy: the header reads, the data do not
    with pytest.raises(ValueError, match=r"imgs\[1\].*sub-bad.nii.gz.*truncated"):
        neurospca.images_to_data([root / "img.nii.gz", img], root / "mask.nii.gz")


def test_truncated_morphometry_is_not_silently_short(good, tmp_path):
    root, n = good
    raw = (root / "lh.thickness").read_bytes()
    bad = tmp_path / "lh.thickness"
    bad.write_bytes(raw[:-40])
    with pytest.raises(ValueError, match=f"declares {n} values but holds {n - 10}"):
        neurospca.load_surf_data(bad)
