"""``neurospca fit``: SPCA-TV on NIfTI maps in a mask, or on cortical surface maps."""

import os

import numpy as np

from .._utils.docs import fill_doc
from .common import UserError, estimator_from_args, existing, expand, fit_with_progress, \
    load_maps, run_metadata, say, write_all

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
    model = fit_with_progress(args, model, X)
    base = [os.path.basename(p) for p in images]
    data = {"images": _file_list(base), "mask": os.path.abspath(args.mask)}
    metadata = run_metadata(args, args.title, data)
    if args.bg_img:
        metadata["bg_img"] = os.path.abspath(args.bg_img)
    write_all(args, model.estimator_, model.space_, meshes=None, metadata=metadata,
              sample_labels=_labels(base, X.shape[0]), bg_img=args.bg_img)
    return 0


def _plot_meshes(args, hemis, meshes_fit):
    """Meshes to draw on and their background shading, per hemisphere."""
    from ..reporting.plotting import surface_background
    from ..surface import load_surf_data, load_surf_mesh

    meshes = {}
    for h, hemi in enumerate(("left", "right")):
        plot_mesh = getattr(args, f"{hemi}_plot_mesh")
        try:
            coords, faces = (load_surf_mesh(plot_mesh, f"--{hemi}-plot-mesh")
                             if plot_mesh else meshes_fit[hemi])
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
        if coords.shape[0] != hemis.n_vertices[h]:
            raise UserError(f"--{hemi}-plot-mesh has {coords.shape[0]} vertices but "
                            f"--{hemi}-mesh has {hemis.n_vertices[h]}.")
        meshes[hemi] = (coords, faces)
        bg_path = getattr(args, f"{hemi}_bg")
        if bg_path:
            bg = np.asarray(load_surf_data(bg_path, f"--{hemi}-bg"), dtype=np.float64)
            if bg.shape != (hemis.n_vertices[h],):
                raise UserError(f"--{hemi}-bg has shape {bg.shape}, expected "
                                f"({hemis.n_vertices[h]},).")
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
        existing(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        existing(getattr(args, f"{hemi}_cortex"), f"--{hemi}-cortex")
        existing(getattr(args, f"{hemi}_plot_mesh"), f"--{hemi}-plot-mesh")
        existing(getattr(args, f"{hemi}_bg"), f"--{hemi}-bg")
    data = {h: expand(getattr(args, f"{h}_data"), f"--{h}-data") for h in ("left", "right")}
    if len(data["left"]) != len(data["right"]):
        raise UserError(f"--left-data has {len(data['left'])} file(s) but --right-data has "
                        f"{len(data['right'])}: give one map per subject for each hemisphere.")
    for hemi in ("left", "right"):
        try:
            meshes_fit[hemi] = load_surf_mesh(getattr(args, f"{hemi}_mesh"), f"--{hemi}-mesh")
        except (ValueError, TypeError) as exc:
            raise UserError(str(exc)) from None
    say(args, f"loading {len(data['left'])} file(s) per hemisphere ...")
    option = "--left-data/--right-data/--left-mesh/--right-mesh"
    try:
        img = load_surface_image(data["left"], data["right"], meshes_fit["left"],
                                 meshes_fit["right"])
    except (ValueError, TypeError) as exc:
        raise UserError(f"{option}: {exc}") from None
    cortex = (args.left_cortex, args.right_cortex)
    model = estimator_from_args(args, mask=None if cortex == (None, None) else cortex)
    X = load_maps(args, model, img, option)
    hemis = model.space_
    say(args, f"data: {X.shape[0]} maps x {X.shape[1]:,} vertices (both hemispheres)")
    meshes = _plot_meshes(args, hemis, meshes_fit)
    if getattr(args, "engine", "auto") == "auto":  # probe pyvista while the model is fitted
        from ..reporting.plotting import start_pyvista_probe

        start_pyvista_probe()
    model = fit_with_progress(args, model, X)
    base = [os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)
            if len({os.path.basename(q) for q in data["left"]}) < len(data["left"])
            else os.path.basename(p) for p in data["left"]]
    desc = {"left maps": _file_list(base), "meshes": f"{args.left_mesh}, {args.right_mesh}"}
    if args.left_cortex or args.right_cortex:
        desc["cortex labels"] = f"{args.left_cortex}, {args.right_cortex}"
    write_all(args, model.estimator_, hemis, meshes=meshes,
              metadata=run_metadata(args, args.title, desc),
              sample_labels=_labels(base, X.shape[0]))
    return 0


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
    volume = args.images is not None or args.mask is not None
    surface = any(getattr(args, f"{h}_{w}") is not None
                  for h in ("left", "right") for w in ("mesh", "data"))
    if volume and surface:
        raise UserError("give either volumes (--images and --mask) or surfaces (--left-mesh, "
                        "--right-mesh, --left-data, --right-data), not both.")
    if volume:
        if args.images is None:
            raise UserError("--images is required with --mask.")
        if args.mask is None:
            raise UserError("--mask is required with --images.")
        return _fit_volume(args)
    if surface:
        return _fit_surface(args)
    raise UserError("give volumes (--images and --mask) or surfaces (--left-mesh, "
                    "--right-mesh, --left-data, --right-data).")
