"""Issue 20 round 17: ``select_penalty``'s CPU for ElasticNet PCA, where it goes.

One process per instance of the paper simulation (``bench_select20g.default_fit``):
the default fit (its CPU seconds are the unit), one fit at the default's point,
then ``select_penalty(est, X, random_state=seed)`` as the tree on ``PYTHONPATH``
has it, with the CPU of its phases (observation only: the functions are wrapped,
called as before): the default fit, the halves' walks (``fit_halves``), the full
fits of judged rows (``fit_returned``), the evidence fits (``guarded_fit``, with
their count), and the rest. Per run: the chosen point and its MSE / Dice, whether
the default fit was kept, and every judged row's evidence (stability per component,
held-out variance and floor x 1e-3). ``--chain both``: main's evidence fits
(``_continuation.CHAIN`` off) then the chained ones, in one process. One JSON line
per instance appended to ``--out``; ``--summary FILE`` prints the table.

    OMP_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_enet20q.py --seed 3637 \\
        --corr 0 --method elasticnet --chain both --out rows.jsonl
    python benchmarks/bench_enet20q.py --summary rows.jsonl
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_select20g import base_parser, default_fit, point, quiet  # noqa: E402

from neurospca import model_selection as ms  # noqa: E402
from neurospca.model_selection import _continuation, _default, _halves, _returned  # noqa: E402

CPU = {}
PHASES = (
    (_default, "fit_default", "default"),
    (_halves, "fit_halves", "walks"),
    (_returned, "fit_returned", "full fits"),
    (_continuation, "guarded_fit", "evidence"),
)


def _timed(fn, name):
    def wrapped(*args, **kw):
        t0 = time.process_time()
        try:
            return fn(*args, **kw)
        finally:
            CPU[name] = CPU.get(name, 0.0) + time.process_time() - t0
            CPU[name + " n"] = CPU.get(name + " n", 0) + 1

    return wrapped


def _wrap():
    """Time each phase where it is looked up (observation only)."""
    import neurospca.model_selection._default_first as first

    for module, attr, name in PHASES:
        original = getattr(module, attr)
        wrapped = _timed(original, name)
        for mod in (module, _returned, first, _continuation):
            if getattr(mod, attr, None) is original:
                setattr(mod, attr, wrapped)


def judged_rows(sel):
    """``{point: [stability per component, held-out variance and floor x 1e-3]}``
    of the rows a selection judged (also ``bench_select20p.py``'s)."""
    out = {}
    for r in sel.results_:
        if "returned_per_component" in r and np.all(np.isfinite(r["returned_per_component"])):
            held = r.get("returned_heldout")
            out[str(point(r["params"]))] = [
                np.round(r["returned_per_component"], 4).tolist(),
                None if held is None else np.round(np.asarray(held) * 1e3, 3).tolist(),
            ]
    return out


def run(est, X, P, seed, cpu_default, chain):
    """One ``select_penalty`` call (``_continuation.CHAIN`` set to ``chain`` where
    the tree has it): chosen point, MSE / Dice, CPU and its phases, judged rows."""
    if hasattr(_continuation, "CHAIN"):
        _continuation.CHAIN = chain
    CPU.clear()
    t0 = time.process_time()
    sel = quiet(ms.select_penalty, est, X, random_state=seed)
    cpu = time.process_time() - t0
    b = sel.best_estimator_
    return {
        "chosen": point(sel.best_params_) + [ms.mse_to_truth(b, P), ms.dice_to_truth(b, P)],
        "kept_default": bool(sel.best_index_ == getattr(sel, "default_index_", None)),
        "ratio": cpu / cpu_default,
        "phases": {k: (v / cpu_default if not k.endswith(" n") else v) for k, v in CPU.items()},
        "judged": judged_rows(sel),
    }


def _diffs(a, b):
    """Largest difference of the per-component evidence over the rows both judged:
    every component, and the components main scored at least 0.5; and of the
    held-out variance x 1e-3."""
    both = [k for k in a["judged"] if k in b["judged"]]
    pairs = [(np.array(a["judged"][k][0]), np.array(b["judged"][k][0])) for k in both]
    held = [
        abs(a["judged"][k][1][0] - b["judged"][k][1][0])
        for k in both
        if a["judged"][k][1] and b["judged"][k][1]
    ]
    every = max((float(np.max(np.abs(x - y))) for x, y in pairs), default=0.0)
    kept = max((float(np.max(np.abs(x - y)[x >= 0.5], initial=0)) for x, y in pairs), default=0.0)
    return every, kept, max(held, default=0.0)


def summary(path):
    """Markdown rows of ``--chain both`` runs: main (off) against chained (on)."""
    ratios = {"off": [], "on": []}
    for line in open(path):
        r = json.loads(line)
        a, b = r["off"], r["on"]
        same = a["chosen"][:3] == b["chosen"][:3] and np.allclose(a["chosen"][3:], b["chosen"][3:])
        every, kept, held = _diffs(a, b)
        ph = b["phases"]
        cells = [
            r["seed"],
            r["corr"],
            "({:g}, {:g}) {:g}".format(*r["default"]),
            "({:g}, {:g}) {:g}: {:.3f} / {:.3f}".format(*a["chosen"]),
            "yes" if same else "**no** ({:g}, {:g}) {:g}: {:.3f} / {:.3f}".format(*b["chosen"]),
            f"{every:.4f} / {kept:.4f} / {held:.3f}",
            f"{a['ratio']:.1f}x -> **{b['ratio']:.1f}x**",
            " / ".join(
                f"{ph.get(k, 0):.1f}" for k in ("default", "walks", "full fits", "evidence")
            ),
            f"{r['cpu_point'] / r['cpu_default']:.2f}",
        ]
        ratios["off"].append(a["ratio"])
        ratios["on"].append(b["ratio"])
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for k, v in ratios.items():
        print(f"{k}: n {len(v)}, median {np.median(v):.1f}x, range {min(v):.1f}-{max(v):.1f}x")


def variants_instance(default):
    """The command line of a variants run (``--variants``, ``default`` unless
    given) and its :func:`instance`: ``(args, X, P, est, row)`` (bench_enet20r.py,
    bench_enet20s.py)."""
    p = base_parser()
    p.add_argument("--variants", default=default)
    args = p.parse_args()
    return (args, *instance(args))


def instance(args):
    """The paper simulation of ``args``, its estimator and the start of its JSON
    row: the default fit's and one fit's CPU seconds, the default's point (the
    phase timers wrapped): ``(X, P, est, row)`` (also ``bench_enet20r.py``'s)."""
    X, P, est, d, cpu_default = default_fit(args.seed, args.corr, args.method)
    at = dict(alpha_rel=d.alpha_rel_, l1_ratio=d.l1_ratio_, tv_ratio=d.tv_ratio_)
    t0 = time.process_time()
    quiet(clone(est).set_params(**at, stability=False).fit, X)
    cpu_point = time.process_time() - t0
    _wrap()
    row = {
        "seed": args.seed,
        "corr": args.corr,
        "method": args.method,
        "tag": args.tag,
        "cpu_default": cpu_default,
        "cpu_point": cpu_point,
        "default": point(at),
    }
    return X, P, est, row


def main():
    if sys.argv[1:2] == ["--summary"]:
        return summary(sys.argv[2])
    p = base_parser()
    p.add_argument("--chain", default="on", help="on, off or both (off first, one process)")
    args = p.parse_args()
    X, P, est, row = instance(args)
    for name in ("off", "on") if args.chain == "both" else (args.chain,):
        row[name] = run(est, X, P, args.seed, row["cpu_default"], name == "on")
    with open(args.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row)[:700], flush=True)


if __name__ == "__main__":
    main()
