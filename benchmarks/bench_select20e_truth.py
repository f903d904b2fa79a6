"""Issue 20 round 6: the truth-best grid point of select_penalty's search, from
fits on ALL samples (each point fitted cold, as the refit is).

For the paper's 2-D set-up with scores correlated r = 0.7, every point of
select_penalty's default search (splits (0.05, 0.1), (0.2, 0.2), (0.3, 0.3),
(0.5, 0.3) x alpha_rel 0.25 ... 8) is fitted on all samples with
``SPCATV(3, operator=op, random_state=0, alpha_rel=a, l1_ratio=l1, tv_ratio=tv)``;
printed: MSE / Dice to the truth per point, and the MSE-best and Dice-best
points (compare with the point bench_select_issue20.py --part steps chose).

    OMP_NUM_THREADS=1 python benchmarks/bench_select20e_truth.py --seeds 3121 3122
"""

import argparse
import warnings

from neurospca import SPCATV, make_paper_simulation, tv_from_mask
from neurospca.model_selection import dice_to_truth, mse_to_truth

SPLITS = ((0.05, 0.1), (0.2, 0.2), (0.3, 0.3), (0.5, 0.3))
GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", nargs="+", type=int, default=[3121])
    args = p.parse_args()
    for seed in args.seeds:
        X, P, mask = make_paper_simulation(250, random_state=seed, correlation=0.7)
        op = tv_from_mask(mask)
        res = {}
        for l1, tv in SPLITS:
            for a in GRID:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = SPCATV(
                        3,
                        operator=op,
                        random_state=0,
                        alpha_rel=a,
                        l1_ratio=l1,
                        tv_ratio=tv,
                        certify_support=False,
                    ).fit(X)
                mse, dice = res[(l1, tv, a)] = (mse_to_truth(m, P), dice_to_truth(m, P))
                print(f"{seed} ({l1}, {tv}) {a:g}: {mse:.3f}/{dice:.2f}", flush=True)
        mse_best = min(res, key=lambda k: res[k][0])
        dice_best = max(res, key=lambda k: res[k][1])
        print(
            f"{seed} MSE-best {mse_best} {res[mse_best]}; Dice-best {dice_best} {res[dice_best]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
