"""``neurospca fit``: SPCA-TV on NIfTI maps in a mask, or on cortical surface maps."""

import os

import numpy as np

from .._utils.docs import fill_doc
from ._checks import UserError, existing, expand, say
from ._fitting import estimator_from_args, fit_with_progress, load_maps, split_groups_from_args
from ._outputs import run_metadata, write_all
from .study import atlas_from_args, finish_study, prepare_study, study_options_given

__all__ = ["run_fit"]


def _file_list(paths):
    """At most five base names of ``paths`` for the data table."""
    return f"{len(paths)} file(s): " + ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else "")


def _labels(base, n_samples):
    """One label per sample: the file names, or sample_0000... for 4-D inputs."""
    return base if len(base) == n_samples else [f"sample_{i:04d}" for i in range(n_samples)]


def _fit_volume(args):
    """Fit volumes (``--images`` in ``--mask``), write the outputs; exit code 0."""
    from ..masking import load_mask_img

    images = expand(args.images, "--images")
    existing(args.mask, "--mask")
    existing(args.bg_img, "--bg-img")
    try:
        mask_img = load_mask_img(args.mask, threshold=args.mask_threshold)
    except (ValueError, TypeError) as exc:
        raise UserError(f"--mask: {exc}") from None
    model = estimator_from_args(args, mask=mask_img, resample=args.resample)
    say(args, f"loading {len(images)} image(s) in the mask {args.mask} ...")
    X = load_maps(args, model, images, "--images/--mask")
    say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} voxels")
    atlas = atlas_from_args(args, model.space_)
    study = study_options_given(args)
    groups = split_groups_from_args(args, model, images, study)
    if study:
        X = prepare_study(args, model, X, images, "--images")
    model = fit_with_progress(args, model, X, groups)
    base = [os.path.basename(p) for p in images]
    data = {"images": _file_list(base), "mask": os.path.abspath(args.mask)}
    metadata = _with_evidence(model, run_metadata(args, args.title, data))
    if args.bg_img:
        metadata["bg_img"] = os.path.abspath(args.bg_img)
    write_all(
        args,
        model.estimator_,
        model.space_,
        meshes=None,
        metadata=metadata,
        sample_labels=_labels(base, X.shape[0]),
        bg_img=args.bg_img,
        **_study_outputs(args, model, atlas),
    )
    return 0


def _with_evidence(model, metadata):
    """The metadata with the evidence for ``--n-components auto`` (when chosen)."""
    evidence = getattr(model, "n_components_evidence_", None)
    return metadata if evidence is None else dict(metadata, n_components_evidence=evidence)


def _study_outputs(args, model, atlas):
    """write_all's study, associations and atlas arguments after the fit."""
    out = {"atlas": atlas, "scores": model._training_scores()}
    if getattr(model, "study_", None) is not None:
        out["study"], out["associations"] = finish_study(args, model)
    return out


def _plot_meshes(args, hemis, meshes_fit):
    """Meshes to draw on and their background shading, per hemisphere."""
    from ..reporting.plotting import surface_background
    from ..surface import load_surf_data, load_surf_mesh

    meshes = {}
    for h, hemi in enumerate(("left", "right")):
        plot_mesh = getattr(args, f"{hemi}_plot_mesh")
        try:
            coords, faces = (
                load_surf_mesh(plot_mesh, f"--{hemi}-plot-mesh") if plot_mesh else meshes_fit[hemi]
            )
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
        if coords.shape[0] != hemis.n_vertices[h]:
            raise UserError(
                f"--{hemi}-plot-mesh has {coords.shape[0]} vertices but "
                f"--{hemi}-mesh has {hemis.n_vertices[h]}."
            )
        meshes[hemi] = (coords, faces)
        if plot_mesh:  # the report's xyz from the anatomical mesh, not the drawn one
            meshes[f"anat_{hemi}"] = np.asarray(meshes_fit[hemi][0], dtype=np.float64)
        bg_path = getattr(args, f"{hemi}_bg")
        if bg_path:
            bg = np.asarray(load_surf_data(bg_path, f"--{hemi}-bg"), dtype=np.float64)
            if bg.shape != (hemis.n_vertices[h],):
                raise UserError(
                    f"--{hemi}-bg has shape {bg.shape}, expected ({hemis.n_vertices[h]},)."
                )
            scale = np.percentile(np.abs(bg), 95)
            bg = np.clip(bg / scale, -1, 1) if scale > 0 else bg
        else:
            bg = surface_background(*meshes_fit[hemi])
        meshes[f"bg_{hemi}"] = bg
    return meshes


def _fit_surface(args):
    """Fit cortical surface maps (per-hemisphere meshes and data), write the outputs;
    exit code 0."""
    from ..surface import load_surf_mesh, load_surface_image

    for opt in ("left_mesh", "right_mesh", "left_data", "right_data"):
        if getattr(args, opt) is None:
            raise UserError(f"--{opt.replace('_', '-')} is required for a surface fit.")
    meshes_fit = {}
    for hemi in ("left", "right"):
        if isinstance(getattr(args, f"{hemi}_mesh"), str):
            existing(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        existing(getattr(args, f"{hemi}_cortex"), f"--{hemi}-cortex")
        existing(getattr(args, f"{hemi}_plot_mesh"), f"--{hemi}-plot-mesh")
        existing(getattr(args, f"{hemi}_bg"), f"--{hemi}-bg")
    data = {h: expand(getattr(args, f"{h}_data"), f"--{h}-data") for h in ("left", "right")}
    if len(data["left"]) != len(data["right"]):
        raise UserError(
            f"--left-data has {len(data['left'])} file(s) but --right-data has "
            f"{len(data['right'])}: give one map per subject for each hemisphere."
        )
    for hemi in ("left", "right"):
        try:
            meshes_fit[hemi] = load_surf_mesh(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
    say(args, f"loading {len(data['left'])} file(s) per hemisphere ...")
    option = "--left-data/--right-data/--left-mesh/--right-mesh"
    try:
        img = load_surface_image(
            data["left"], data["right"], meshes_fit["left"], meshes_fit["right"]
        )
    except (ValueError, TypeError) as exc:
        raise UserError(f"{option}: {exc}") from None
    cortex = (args.left_cortex, args.right_cortex)
    model = estimator_from_args(args, mask=None if cortex == (None, None) else cortex)
    X = load_maps(args, model, img, option)
    hemis = model.space_
    say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} vertices (both hemispheres)")
    meshes = _plot_meshes(args, hemis, meshes_fit)
    atlas = atlas_from_args(args, hemis)
    groups = split_groups_from_args(args, model, None)  # --split-blocks only: no guess
    if study_options_given(args):
        _same_subjects(data)
        X = prepare_study(args, model, X, data["left"], "--left-data")
    model = fit_with_progress(args, model, X, groups)
    base = [
        os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)
        if len({os.path.basename(q) for q in data["left"]}) < len(data["left"])
        else os.path.basename(p)
        for p in data["left"]
    ]
    desc = {
        "left maps": _file_list(base),
        "meshes": getattr(args, "mesh_label", f"{args.left_mesh}, {args.right_mesh}"),
    }
    if args.left_cortex or args.right_cortex:
        desc["cortex labels"] = f"{args.left_cortex}, {args.right_cortex}"
    write_all(
        args,
        model.estimator_,
        hemis,
        meshes=meshes,
        metadata=_with_evidence(model, run_metadata(args, args.title, desc)),
        sample_labels=_labels(base, X.shape[0]),
        **_study_outputs(args, model, atlas),
    )
    return 0


def _same_subjects(data):
    """The left and right maps of each row belong to one subject (by their IDs)."""
    from ..study import subject_id_from_path

    for left, right in zip(data["left"], data["right"], strict=True):
        a, b = subject_id_from_path(left), subject_id_from_path(right)
        if a is not None and b is not None and a != b:
            raise UserError(
                f"--left-data/--right-data: {left!r} is {a} but {right!r} is {b}; "
                "give the same subjects in the same order."
            )


@fill_doc
def run_fit(args):
    """``neurospca fit``: volumes or surfaces, as the options say.

    Parameters
    ----------
    %(command_args)s

    Returns
    -------
    %(exit_code)s
    """
    _pipeline_inputs(args)
    volume = args.images is not None or args.mask is not None
    surface = any(
        getattr(args, f"{h}_{w}") is not None for h in ("left", "right") for w in ("mesh", "data")
    )
    if volume and surface:
        raise UserError(
            "give either volumes (--images and --mask) or surfaces (--left-mesh, "
            "--right-mesh, --left-data, --right-data), not both."
        )
    if volume:
        if args.images is None:
            raise UserError("--images is required with --mask.")
        if args.mask is None:
            raise UserError("--mask is required with --images.")
        return _fit_volume(args)
    if surface:
        return _fit_surface(args)
    raise UserError(
        "give volumes (--images and --mask) or surfaces (--left-mesh, "
        "--right-mesh, --left-data, --right-data)."
    )


def _pipeline_inputs(args):
    """--bids-derivatives / --freesurfer-subjects: fill --images or --left/right-data (and
    the meshes when they are a known template's)."""
    from ..study import find_bids_derivatives, find_freesurfer_subjects

    bids, fs = getattr(args, "bids_derivatives", None), getattr(args, "freesurfer_subjects", None)
    if bids is None and fs is None:
        return
    given = [o for o in ("images", "left_data", "right_data") if getattr(args, o) is not None]
    if (bids and fs) or given:
        raise UserError(
            "give one source of maps: --bids-derivatives, --freesurfer-subjects, "
            "--images or --left-data/--right-data."
        )
    try:
        if bids:
            if not args.space or not args.suffix:
                raise UserError(
                    "--bids-derivatives needs --space and --suffix (e.g. "
                    "--space fsaverage5 --suffix thickness)."
                )
            kind, files, _ = find_bids_derivatives(bids, args.space, args.suffix)
            template, root = args.space, None
        else:
            files, _ = find_freesurfer_subjects(fs, args.measure)
            kind, template, root = "surface", args.measure.split(".")[-1], fs
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if kind == "volume":
        args.images = files["images"]
        return
    args.left_data, args.right_data = files["left"], files["right"]
    if args.left_mesh is None and args.right_mesh is None:
        _template_meshes(args, template, root)


def _template_meshes(args, template, subjects_dir):
    """Meshes of a template: SUBJECTS_DIR/<template>/surf/{lh,rh}.pial, else nilearn's
    fsaverage5 (bundled, offline); otherwise --left-mesh/--right-mesh are needed."""
    if subjects_dir is not None:
        paths = [os.path.join(subjects_dir, template, "surf", f"{h}.pial") for h in ("lh", "rh")]
        if all(os.path.isfile(p) for p in paths):
            args.left_mesh, args.right_mesh = paths
            return
    if template == "fsaverage5":
        from nilearn.datasets import load_fsaverage

        mesh = load_fsaverage("fsaverage5")["pial"]
        args.left_mesh, args.right_mesh = (
            (mesh.parts[h].coordinates, mesh.parts[h].faces) for h in ("left", "right")
        )
        args.mesh_label = "fsaverage5 pial (nilearn)"
        return
    raise UserError(
        f"the maps are on {template!r}: give its meshes with --left-mesh and --right-mesh."
    )
