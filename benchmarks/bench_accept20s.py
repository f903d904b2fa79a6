"""Issue 20 round 19: the acceptance table, today's defaults on fresh seeds.

Composes the existing benches (run them for their parts: ``bench_select20h.py
--truth-best`` + ``summarise_select20o.py`` for ``select_penalty`` on the paper
simulation, ``bench_peers20r.py`` for the atrophy sets and the real halves,
``bench_specks20d.py`` for specks, ``bench_other_defaults.py``'s tables) and
adds the parts no bench had, one JSON line per fit appended to ``--out``:

- ``covary``: the default (joint) fit against ``method="deflation"`` (every
  other setting at its default) on the paper set-up and fsaverage5 atrophy
  (age / sex regressed) at score correlations 0, 0.4, 0.8: per planted pattern
  |cos| and certified-support Dice, the chosen point, CPU seconds.
- ``stability``: two simulated cohorts (fsaverage5 atrophy r 0.6, N = 266;
  paper r 0.7, N = 500) cut into two random halves, each fitted at its
  defaults: ``stability_`` (the claim) against the matched abs corr of the
  two independent fits (the actual) and the truth.
- ``api``: ``select_penalty(ImageSPCATV(3, mask=cortex), SurfaceImage,
  confounds=age/sex)`` on the fsaverage5 atrophy cohort (its printed table, the
  choice and the default fit scored on the truth, CPU in default fits) and on a
  glob of NIfTI files with a mask image and confounds.
- ``report``: ``ImageSPCATV(4)``'s default fit of the atrophy SurfaceImage
  (3 planted patterns: the 4th should not reproduce); its report's HTML (saved in the
  temporary folder, not kept) searched for the stability column, flags and the methods paragraph.
- ``other``: ``bench_other_defaults``'s SSPCA and NSPCA tables on ``--seeds``,
  and SPCA-TV's dual solver against CONESTA where the optimum is empty.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_accept20s.py covary \\
        --seeds 3761 --out D/covary.jsonl
    python benchmarks/bench_accept20s.py --summary D/covary.jsonl D/stability.jsonl
"""

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _trust import atrophy, certified_dice, paper2d, recovery  # noqa: E402

from neurospca import SPCATV, ImageSPCATV, make_atrophy_cohort, make_paper_simulation, tv_from_mask  # noqa: E402
from neurospca.decomposition import matched_abs_corr  # noqa: E402


def emit(out, rec):
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec)[:300], flush=True)


def fit_default(X, op, K, **params):
    """(model, CPU s, warnings said) of the default fit (``params`` changed)."""
    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = SPCATV(K, operator=op, random_state=0, **params).fit(X)
    return m, time.process_time() - c0, sorted({str(w.message)[:90] for w in caught})


def fields(m, P=None):
    rec = dict(
        point=[m.l1_ratio_, m.tv_ratio_, m.alpha_rel_],
        stability=np.round(np.asarray(m.stability_, float), 3).tolist(),
        nonzero=np.mean(m.components_ != 0, axis=1).round(4).tolist(),
        n_uncertain=np.asarray(getattr(m, "n_uncertain_", []), int).tolist(),
    )
    if P is not None:
        cos, _ = recovery(m.components_, P)
        rec.update(cos=cos.round(3).tolist(), cert_dice=certified_dice(m, P).round(3).tolist())
    return rec


def run_covary(args):
    for seed in args.seeds:
        for kind in ("paper", "fs5"):
            for corr in (0.0, 0.4, 0.8):
                if kind == "paper":
                    X, op, P = paper2d(corr, seed=seed)
                else:
                    X, op, P = atrophy("fsaverage5", corr, seed=seed)
                for method in ("joint", "deflation"):
                    m, cpu, said = fit_default(X, op, len(P), method=method)
                    rec = dict(mode="covary", set=f"{kind}-{corr:g}", seed=seed, method=method)
                    emit(args.out, dict(rec, cpu=round(cpu, 1), said=said, **fields(m, P)))


def run_stability(args):
    for seed in args.seeds:
        for kind in ("fs5-0.6", "paper-0.7"):
            if kind == "paper-0.7":
                X, op, P = paper2d(0.7, seed=seed, n_samples=500)
            else:
                X, op, P = atrophy("fsaverage5", 0.6, seed=seed, n_samples=266)
            rows = np.random.default_rng(seed).permutation(len(X))
            halves = [np.sort(rows[: len(X) // 2]), np.sort(rows[len(X) // 2 :])]
            fits = [fit_default(X[h], op, len(P)) for h in halves]
            for i, (m, cpu, said) in enumerate(fits):
                other = fits[1 - i][0]
                actual = matched_abs_corr(m.components_, other.components_)[1]
                rec = dict(mode="stability", set=kind, seed=seed, half="AB"[i], cpu=round(cpu, 1))
                rec.update(actual=np.round(actual, 3).tolist(), said=said, **fields(m, P))
                emit(args.out, rec)


def atrophy_image(seed, n=133):
    """The fsaverage5 atrophy cohort as a SurfaceImage, its cortex masks, its
    confounds (age, sex) and the planted patterns on the cortex."""
    from nilearn.datasets import load_fsaverage
    from nilearn.surface import SurfaceImage

    d = make_atrophy_cohort(n, mesh="fsaverage5", correlation=0.6, random_state=seed)
    nl = d.n_vertices[0]
    mesh = load_fsaverage("fsaverage5")["pial"]
    img = SurfaceImage(mesh=mesh, data={"left": d.X[:, :nl].T, "right": d.X[:, nl:].T})
    mask = (d.cortex[:nl], d.cortex[nl:])
    return img, mask, d.confounds, d.patterns[:, d.cortex], d


def _selection(est, X, **kw):
    """``select_penalty`` (verbose) with its printed table and CPU seconds."""
    from neurospca.model_selection import select_penalty

    buf = io.StringIO()
    c0 = time.process_time()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = select_penalty(est, X, verbose=1, **kw)
    return sel, time.process_time() - c0, buf.getvalue()


def run_api(args):
    seed = args.seeds[0]
    img, mask, conf, P, d = atrophy_image(seed)
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = ImageSPCATV(3, mask=mask, random_state=0).fit(img, confounds=conf)
    cpu_default = time.process_time() - c0
    sel, cpu, table = _selection(
        ImageSPCATV(3, mask=mask, random_state=0), img, confounds=conf, random_state=seed
    )
    best = sel.best_estimator_
    rec = dict(mode="api", set="fs5-0.6 SurfaceImage + confounds", seed=seed)
    rec.update(cpu_default=round(cpu_default, 1), cpu_select=round(cpu, 1), table=table)
    rec.update(img_type=type(best.components_img_).__name__)
    for name, m in (("default", default), ("chosen", best)):
        rec[name] = dict(fields(m.estimator_, P), kept_default=name == "default")
    rec["kept_default"] = bool(sel.best_index_ == getattr(sel, "default_index_", None))
    emit(args.out, rec)
    emit(args.out, nifti_api(seed))


def nifti_api(seed, n=24):
    """``select_penalty`` on a glob of NIfTI files, a mask image and confounds
    (two blobs and a confound over the mask, as tests/test_model_selection)."""
    import nibabel as nib

    rng = np.random.default_rng(seed)
    shape = (9, 10, 7)
    grid = np.indices(shape).transpose(1, 2, 3, 0).astype(float)
    mask = ((grid - [4, 4.5, 3]) ** 2 / [16, 20, 9]).sum(-1) < 1.0
    blobs = [np.exp(-((grid - c) ** 2).sum(-1) / 2.0) for c in ([2, 3, 3], [6, 6, 3])]
    conf = rng.standard_normal((n, 1))
    amp = rng.standard_normal((n, 2)) * [3.0, 2.0]
    data = amp[:, 0, None, None, None] * blobs[0] + amp[:, 1, None, None, None] * blobs[1]
    data = data + 2 * conf[:, :, None, None] * mask + 0.2 * rng.standard_normal((n,) + shape)
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            nib.save(
                nib.Nifti1Image(data[i].astype(np.float32), affine), f"{tmp}/sub-{i:02d}.nii.gz"
            )
        est = ImageSPCATV(2, mask=nib.Nifti1Image(mask.astype(np.uint8), affine), random_state=0)
        sel, cpu, table = _selection(est, f"{tmp}/sub-*.nii.gz", confounds=conf, random_state=seed)
    comps = sel.best_estimator_.estimator_.components_
    truth = np.array([b[mask] for b in blobs])
    cos, _ = recovery(comps, truth)
    rec = dict(mode="api", set="NIfTI glob + mask image + confounds", seed=seed, table=table)
    rec.update(cpu_select=round(cpu, 1), chosen=sel.best_params_, cos=cos.round(3).tolist())
    rec.update(img_type=type(sel.best_estimator_.components_img_).__name__)
    return rec


def report_text(html):
    """(stability column shown, the methods paragraph's stability sentence, the
    flag sentences) of a report's HTML."""
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    methods = re.findall(r"Reproducibility of the components.{0,800}?\.(?= [A-Z]|$)", text)
    flags = re.findall(r"Component \d+ does not reproduce.{0,200}?\.(?= [A-Z]|$)", text)
    return "stability (" in text, methods, flags


def run_report(args):
    """Two reports: the atrophy SurfaceImage with K = 4 (3 planted) and the paper
    set with K = 5 (3 planted), each searched for ``stability_`` and its flags."""
    from neurospca.reporting import make_report

    seed = args.seeds[0]
    img, mask, conf, P, _ = atrophy_image(seed)
    X, op, P2 = paper2d(0.7, seed=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = ImageSPCATV(4, mask=mask, random_state=0).fit(img, confounds=conf)
        m2 = SPCATV(5, operator=op, random_state=0).fit(X)
        cases = [
            ("fs5-0.6 K=4", m.estimator_, P, str(m.generate_report(interactive=False))),
            ("paper-0.7 K=5", m2, P2, str(make_report(m2, interactive=False))),
        ]
    said = sorted({str(w.message)[:200] for w in caught if "reproduc" in str(w.message)})
    for name, est, truth, html in cases:
        path = Path(tempfile.gettempdir()) / f"report_{seed}_{name.split()[0]}.html"
        path.write_text(html)
        column, methods, flags = report_text(html)
        rec = dict(mode="report", set=name, seed=seed, html=str(path), said=said)
        rec.update(fields(est, truth), column=column, methods=methods, flags=flags)
        emit(args.out, rec)


def run_other(args):
    import bench_other_defaults as o

    from neurospca.decomposition import _base, _nspca

    _nspca._adjusted_variance = _base.adjusted_variance  # moved since bench_other_defaults
    o.SEEDS = list(args.seeds)
    print(f"(the tables' headers name seeds 40-49; the seeds here are {o.SEEDS})")
    if "sspca" in args.parts:
        o.bench_sspca()
    if "nspca" in args.parts:
        o.bench_nspca()
    if "conesta" not in args.parts:
        return
    print(
        "\n| paper seed | shape, N | alpha_rel | non-zeros dual / conesta | certified dual / "
        "conesta | converged_ dual / conesta | warnings conesta |\n|---|---|---|---|---|---|---|"
    )
    for seed in args.seeds[:1]:
        for shape, n in (((30, 30), 100), ((100, 100), 250)):
            X, _, mask = make_paper_simulation(n, random_state=seed, shape=shape)
            for rel in (1.0, 2.0, 3.0, 4.0):
                (a, ca, ka, _), (b, cb, kb, said) = [
                    _nonzeros(X, mask, rel, solver) for solver in ("dual", "conesta")
                ]
                print(
                    f"| {seed} | {shape}, {n} | {rel:g} | {a} / {b} | {ca} / {cb} "
                    f"| {_b(ka)} / {_b(kb)} | {said} |",
                    flush=True,
                )


def _b(flags):
    return "/".join("yes" if f else "no" for f in flags)


def _nonzeros(X, mask, rel, solver):
    """Non-zeros, certified non-zeros, ``converged_`` and warnings of one fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = SPCATV(3, alpha_rel=rel, operator=tv_from_mask(mask), solver=solver, random_state=0)
        m.fit(X)
    cert = np.asarray(m.certified_support_).sum(axis=1).tolist()
    said = sorted({str(w.message)[:60] for w in caught})
    return np.count_nonzero(m.components_, axis=1).tolist(), cert, list(m.converged_), said


def fmt(a):
    return "/".join(f"{x:.2f}" for x in a)


def summary(paths):
    recs = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    cov = [r for r in recs if r["mode"] == "covary"]
    print("| set | seed | method | abs cos | certified Dice | worst | point | stability_ | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(cov, key=lambda r: (r["set"].split("-")[0], r["set"], r["seed"], r["method"])):
        print(
            f"| {r['set']} | {r['seed']} | {r['method']} | {fmt(r['cos'])} | {fmt(r['cert_dice'])} "
            f"| {min(r['cos']):.2f} / {min(r['cert_dice']):.2f} | {r['point']} "
            f"| {fmt(r['stability'])} | {r['cpu']:.1f} |"
        )
    print(
        "\n| set | seed | half | point | stability_ (claim) | actual (other half) | abs cos "
        "(truth) | flagged < 0.5 | CPU s |\n|---|---|---|---|---|---|---|---|---|"
    )
    for r in [r for r in recs if r["mode"] == "stability"]:
        flag = [i + 1 for i, s in enumerate(r["stability"]) if s < 0.5]
        print(
            f"| {r['set']} | {r['seed']} | {r['half']} | {r['point']} | {fmt(r['stability'])} "
            f"| {fmt(r['actual'])} | {fmt(r['cos'])} | {flag or '-'} | {r['cpu']:.1f} |"
        )
    report_summary([r for r in recs if r["mode"] == "report"])


def report_summary(recs):
    for r in recs:
        print(
            f"- {r['set']} (seed {r['seed']}): stability_ {fmt(r['stability'])}; "
            f"column {r['column']}"
        )
        for line in r["methods"] + r["flags"]:
            print(f"  - {line}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", nargs="?", choices=["covary", "stability", "api", "report", "other"])
    p.add_argument("--seeds", nargs="+", type=int, default=[3761])
    p.add_argument("--out")
    p.add_argument("--parts", nargs="+", default=["sspca", "nspca", "conesta"], help="other")
    p.add_argument("--summary", nargs="+", help="JSON lines files: print the tables")
    args = p.parse_args()
    if args.summary:
        return summary(args.summary)
    modes = dict(covary=run_covary, stability=run_stability, api=run_api, report=run_report)
    modes.get(args.mode, run_other)(args)


if __name__ == "__main__":
    main()
