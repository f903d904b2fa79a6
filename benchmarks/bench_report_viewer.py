"""Issue 21, item 5: what the report's interactive viewer costs (size, build, browser).

For fsaverage5 (both hemispheres, inflated meshes with sulcal shading and pial
coordinates) and the MNI152 brain mask at 2 mm and 3 mm: the embedded data
shared by all components and per component (sparse: Gaussian blobs thresholded
to about 5 % of the features; dense: every feature non-zero, the worst case),
the time to build it in Python, and in headless Chromium the time until the
viewer is ready (inflate + first draw) and per redraw (10 wheel events
dispatched in the page: a slice step, a zoom step of the mesh with WebGL,
whose work a 1-pixel ``readPixels`` waits for, and with the 2-D canvas fallback).

Run: ``python benchmarks/bench_report_viewer.py [--components 10] [--repeat 3]``.
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np

from neurospca import VolumeMasker, tv_from_hemispheres
from neurospca.reporting import _viewer, surface_background


def _blob_components(xyz, n_components, rng, dense=False):
    """Sparse blobs (about 5 % of the features) or dense maps, one per component."""
    out = []
    for _ in range(n_components):
        centre = xyz[rng.integers(len(xyz))]
        d2 = ((xyz - centre) ** 2).sum(1)
        width = np.sqrt(np.quantile(d2, 0.05) / 2)
        v = np.exp(-d2 / (2 * width**2)) * rng.choice([-1, 1])
        if dense:
            v = v + 0.05 * rng.standard_normal(len(v))
        else:
            v[d2 > np.quantile(d2, 0.05)] = 0.0
        out.append(v / np.linalg.norm(v))
    return np.array(out)


def volume_case(resolution):
    from nilearn.datasets import load_mni152_brain_mask

    masker = VolumeMasker(load_mni152_brain_mask(resolution=resolution, threshold=0.48))
    aff = masker.mask_img.affine
    xyz = np.argwhere(masker.mask) @ aff[:3, :3].T + aff[:3, 3]
    return (
        f"MNI152 {resolution} mm ({masker.n_features:,} voxels)",
        xyz,
        (lambda comps: _viewer.volume_data(masker, comps)),
    )


def surface_case():
    from nilearn.datasets import load_fsaverage

    fs = load_fsaverage("fsaverage5")
    meshes = {}
    for h in ("left", "right"):
        pial, infl = fs["pial"].parts[h], fs["inflated"].parts[h]
        meshes[h] = (infl.coordinates, infl.faces)
        meshes[f"bg_{h}"] = surface_background(pial.coordinates, pial.faces)
    _, hemis = tv_from_hemispheres(fs["pial"].parts["left"], fs["pial"].parts["right"])
    pial = tuple(fs["pial"].parts[h].coordinates for h in ("left", "right"))
    xyz = np.vstack(pial)[np.r_[hemis.vertices[0], hemis.vertices[1] + len(pial[0])]]
    return (
        f"fsaverage5 ({hemis.n_features:,} vertices)",
        xyz,
        (lambda comps: _viewer.surface_data(hemis, meshes, comps, pial)),
    )


def build(make, comps, repeat):
    """(data, best build time in s) of the viewer's data."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        data = make(comps)
        text = _viewer._json(data)
        best = min(best, time.perf_counter() - t0)
    return data, text, best


def page(data, text):
    """A minimal page holding the viewer as the report does (same template markup)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("neurospca.reporting", "templates"), autoescape=True
    )
    script = _viewer.viewer_script()
    viewer = {
        "kind": data["kind"],
        "labels": [c["label"] for c in data["comps"]],
        "data": Markup(text),
        "script": Markup(script),
        "csp": _viewer.csp_hash(script),
        "note": "",
    }
    body = env.get_template("section_viewer.html").render(viewer=viewer)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"img-src data:; style-src 'unsafe-inline'; script-src {viewer['csp']}\">"
        f"</head><body>{body}<script>{script}</script></body></html>"
    )


def browser_times(pw, html, kind, flags, repeat):
    """(ms until ready, ms per redraw) in headless Chromium."""
    b = pw.chromium.launch(
        executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu", *flags]
    )
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as fh:
        fh.write(html)
    ready, redraw, renderer = [], [], None
    try:
        for _ in range(repeat):
            p = b.new_page(viewport={"width": 1200, "height": 900})
            t0 = time.perf_counter()
            p.goto("file://" + fh.name)
            p.wait_for_selector(".nsv[data-ready='1']", timeout=120_000)
            ready.append(1e3 * (time.perf_counter() - t0))
            renderer = p.get_attribute(".nsv", "data-renderer") or "slices"
            redraw.append(_redraw_ms(p, kind))
            p.close()
    finally:
        b.close()
        os.unlink(fh.name)
    return min(ready), min(redraw), renderer


def _redraw_ms(p, kind):
    """Mean time of 10 redraws, measured inside the page (events dispatched in JS)."""
    event = (
        "new WheelEvent('wheel', {deltaY: i % 2 ? 100 : -100, clientX: r.left + 5, "
        "clientY: r.top + r.height / 2, bubbles: true, cancelable: true})"
        if kind == "volume"
        else "new WheelEvent('wheel', {deltaY: i % 2 ? 100 : -100, bubbles: true, "
        "cancelable: true})"
    )
    return p.evaluate(
        f"""() => {{
        const c = document.querySelector('.nsv-canvas'), r = c.getBoundingClientRect();
        const t0 = performance.now();
        for (let i = 0; i < 10; i++) c.dispatchEvent({event});
        const gl = c.getContext('webgl');  // null on a 2-D canvas
        if (gl) gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));
        return (performance.now() - t0) / 10;
    }}"""
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--components", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--cases", nargs="+", default=["fsaverage5", "mni3", "mni2"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    makers = {
        "fsaverage5": surface_case,
        "mni3": lambda: volume_case(3),
        "mni2": lambda: volume_case(2),
    }
    for label, xyz, make in (makers[name]() for name in args.cases):
        for dense in (False, True):
            comps = _blob_components(xyz, args.components, rng, dense=dense)
            _, _, t1 = build(make, comps[:1], args.repeat)
            data, text, tk = build(make, comps, args.repeat)
            total, shared, per = _viewer._sizes(data)
            row = {
                "case": label,
                "components": "dense" if dense else "sparse (5 %)",
                "shared_kb": round(shared, 1),
                "per_component_kb": round(per, 1),
                "total_kb": round(total, 1),
                "build_1_s": round(t1, 3),
                "build_per_component_s": round((tk - t1) / (args.components - 1), 4),
            }
            if not args.no_browser and not dense:
                from playwright.sync_api import sync_playwright

                html = page(data, text)
                with sync_playwright() as pw:
                    flag_sets = [[]] if data["kind"] == "volume" else [[], ["--disable-3d-apis"]]
                    for flags in flag_sets:
                        ready, redraw, renderer = browser_times(
                            pw, html, data["kind"], flags, args.repeat
                        )
                        row[f"ready_ms_{renderer}"] = round(ready)
                        row[f"redraw_ms_{renderer}"] = round(redraw, 1)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
