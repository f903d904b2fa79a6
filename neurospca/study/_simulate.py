"""A simulated multi-site atrophy study, written to disk as FreeSurfer/BIDS users have it.

Built on :func:`neurospca.make_atrophy_cohort` (real fsaverage5 or conte69
meshes and mean thickness, age and sex effects, smooth and white noise): its
three planted regions keep their places, their severities are redrawn so that
two of them follow the diagnosis and one does not, and scanner effects are
added per site.
"""

import os

import numpy as np

from ..datasets import make_atrophy_cohort
from ..surface import write_surf_data, write_surf_mesh

__all__ = ["make_multisite_cohort"]

_DX = np.array(["CN", "MCI", "AD"])


def _participants(n, rng, age, sex, n_sites):
    """Diagnosis (level 0/1/2), site (AD a little more frequent at the last site)."""
    level = rng.choice(3, size=n, p=[0.4, 0.35, 0.25])
    weights = np.ones((3, n_sites))
    weights[2, -1] = 1.6  # sites and diagnosis mildly confounded, as in real cohorts
    weights /= weights.sum(axis=1, keepdims=True)
    site = np.array([rng.choice(n_sites, p=weights[lv]) for lv in level])
    mmse = np.clip(np.round(29.0 - 3.0 * level + rng.normal(0.0, 1.5, n)), 10, 30)
    return level, site, mmse


def _write(folder, ids, X, sizes, meshes, file_format, participants, space):
    """Per-subject left/right maps, meshes, participants.tsv, truth; returns paths."""
    os.makedirs(folder, exist_ok=True)
    paths = {"left": [], "right": []}
    for i, sid in enumerate(ids):
        maps = {"left": X[i, : sizes[0]], "right": X[i, sizes[0] :]}
        for hemi, letter, fs in (("left", "L", "lh"), ("right", "R", "rh")):
            if file_format == "gii":
                sub = os.path.join(folder, sid, "anat")
                path = os.path.join(sub, f"{sid}_hemi-{letter}_{space}_thickness.shape.gii")
            else:
                sub = os.path.join(folder, sid, "surf")
                path = os.path.join(sub, f"{fs}.thickness.mgh")
            os.makedirs(sub, exist_ok=True)
            write_surf_data(maps[hemi], path)
            paths[hemi].append(path)
    for (coords, faces), fs in zip(meshes, ("lh", "rh"), strict=True):
        write_surf_mesh(coords, faces, os.path.join(folder, f"{fs}.pial.surf.gii"))
    participants.to_csv(
        os.path.join(folder, "participants.tsv"), sep="\t", index=False, na_rep="n/a"
    )
    return paths


def _participant_table(ids, age, sex, site, level, mmse):
    """The participants table of :func:`make_multisite_cohort`."""
    import pandas as pd

    return pd.DataFrame(
        {
            "participant_id": ids,
            "age": np.round(age, 1),
            "sex": np.where(sex > 0, "M", "F"),
            "site": [f"site{chr(65 + s)}" for s in site],
            "dx": _DX[level],
            "mmse": mmse.astype(int),
        }
    )


def _write_cohort(folder, out, ids, base, rng, n_extra_rows, file_format, space):
    """Write the images, a shuffled participants table with ``n_extra_rows``
    participants who have no images, and ``truth.npz``; returns the paths."""
    import pandas as pd

    n = len(ids)
    extra = pd.DataFrame(
        {
            "participant_id": [f"sub-{n + i + 1:03d}" for i in range(n_extra_rows)],
            "age": 70.0,
            "sex": "F",
            "site": "siteA",
            "dx": "CN",
            "mmse": 29,
        }
    )
    shuffled = (
        pd.concat([out.participants, extra])
        .sample(frac=1.0, random_state=int(rng.integers(2**31)))
        .reset_index(drop=True)
    )
    paths = _write(
        folder,
        ids,
        out.X,
        base.n_vertices,
        (base.mesh_left, base.mesh_right),
        file_format,
        shuffled,
        space,
    )
    np.savez(
        os.path.join(folder, "truth.npz"),
        patterns=base.patterns,
        severities=out.severities,
        cortex=out.cortex,
    )
    return paths


def make_multisite_cohort(
    folder=None,
    n_samples=133,
    *,
    mesh="fsaverage5",
    file_format="gii",
    site_offsets=(-0.2, 0.05, 0.2),
    site_scales=(0.8, 1.0, 1.3),
    dx_effect=(0.35, 0.3),
    severity_sd=(0.25, 0.25, 0.35),
    noise=0.15,
    smooth_noise=0.15,
    n_extra_rows=2,
    random_state=0,
):
    """A multi-site cortical-thickness study with diagnosis-driven atrophy.

    Subject ``i`` at site ``s``, vertex ``j`` of the cortex::

        X[i, j] = m_j + o_s + c_s (Y[i, j] - m_j),
        Y[i, j] = baseline[j] - sum_k sev[i, k] patterns[k, j] + age, sex effects + noise

    with ``m`` the cohort's mean map. The three patterns and the confound
    effects are those of :func:`neurospca.make_atrophy_cohort`. Severities:
    ``sev[:, k] = dx_effect[k] * level + severity_sd[k] * z`` for the two
    diagnosis-driven regions (medial temporal, prefrontal; level 0/1/2 for
    CN/MCI/AD), ``sev[:, 2] = severity_sd[2] * z`` for the precuneus, unrelated
    to the diagnosis. Sites have offsets ``o_s`` (mm) and scales ``c_s``; AD is
    a little more frequent at the last site. MMSE falls 3 points per level.

    Parameters
    ----------
    folder : path, optional
        Where to write: ``sub-XXX/anat/sub-XXX_hemi-{L,R}_thickness.shape.gii``
        (``file_format="gii"``) or ``sub-XXX/surf/{lh,rh}.thickness.mgh``
        (``"mgh"``), ``{lh,rh}.pial.surf.gii``, ``participants.tsv``
        (participant_id, age, sex, site, dx, mmse; rows shuffled, plus
        ``n_extra_rows`` subjects without images) and ``truth.npz``
        (patterns, severities, cortex). None: nothing is written.
    n_samples : int, default=133
    mesh : {"fsaverage5", "conte69"}, default="fsaverage5"
    file_format : {"gii", "mgh"}, default="gii"
    site_offsets, site_scales : sequence of float
        One per site (mm, and factors).
    dx_effect : (float, float), default=(0.35, 0.3)
        Severity (mm) per diagnosis level of the two driven regions.
    severity_sd : (float, float, float), default=(0.25, 0.25, 0.35)
        Subject-level severity spread (mm) of the three regions.
    noise, smooth_noise : float, default=0.15
        As in :func:`neurospca.make_atrophy_cohort`.
    n_extra_rows : int, default=2
        Rows of participants.tsv with no images (excluded subjects).
    random_state : int, default=0

    Returns
    -------
    sklearn.utils.Bunch
        ``X`` (n_samples, n_vertices, with site effects), ``patterns`` (3,
        n_vertices), ``severities`` (n_samples, 3), ``participants`` (the
        table, image order, without the extra rows), ``cortex``,
        ``mesh_left``/``mesh_right``, ``n_vertices``, ``paths`` (``{"left",
        "right"}`` lists, when written), ``folder``.
    """
    from sklearn.utils import Bunch

    if file_format not in ("gii", "mgh"):
        raise ValueError(f"file_format must be 'gii' or 'mgh', got {file_format!r}.")
    if len(site_offsets) != len(site_scales) or len(site_offsets) < 2:
        raise ValueError("site_offsets and site_scales must have one value per site (>= 2).")
    base = make_atrophy_cohort(
        n_samples,
        mesh=mesh,
        correlation=0.0,
        noise=noise,
        smooth_noise=smooth_noise,
        random_state=random_state,
    )
    rng = np.random.default_rng([int(random_state), 21])
    n, n_sites = int(n_samples), len(site_offsets)
    age, sex = base.confounds[:, 0], base.confounds[:, 1]
    level, site, mmse = _participants(n, rng, age, sex, n_sites)
    z = rng.standard_normal((n, 3))
    sev = z * np.asarray(severity_sd, dtype=np.float64)
    sev[:, :2] += np.outer(level, dx_effect)
    cortex = base.cortex
    Y = base.X + base.scores @ base.patterns - sev @ base.patterns
    m = Y[:, cortex].mean(axis=0)
    X = Y.copy()
    offsets, scales = np.asarray(site_offsets, float), np.asarray(site_scales, float)
    X[:, cortex] = m + offsets[site][:, None] + scales[site][:, None] * (Y[:, cortex] - m)
    ids = [f"sub-{i + 1:03d}" for i in range(n)]
    table = _participant_table(ids, age, sex, site, level, mmse)
    out = Bunch(
        X=X,
        patterns=base.patterns,
        severities=sev,
        participants=table,
        cortex=cortex,
        mesh_left=base.mesh_left,
        mesh_right=base.mesh_right,
        n_vertices=base.n_vertices,
        paths=None,
        folder=folder,
    )
    if folder is not None:
        space = "space-fsaverage5" if mesh == "fsaverage5" else "space-fsLR_den-32k"
        out.paths = _write_cohort(
            os.fspath(folder), out, ids, base, rng, n_extra_rows, file_format, space
        )
    return out
