"""Compare two results.npz files array by array (bit for bit).

python compare.py old.npz new.npz
"""

import sys

import numpy as np

o = np.load(sys.argv[1])
n = np.load(sys.argv[2])
same = diff = 0
for k in sorted(set(o) | set(n)):
    if k not in o:
        print("NEW ONLY", k)
        continue
    if k not in n:
        print("OLD ONLY", k)
        continue
    eq = o[k].shape == n[k].shape and np.array_equal(o[k], n[k], equal_nan=True)
    if eq:
        same += 1
    else:
        diff += 1
        print(
            "DIFF",
            k,
            o[k].shape,
            n[k].shape,
            np.max(np.abs(o[k] - n[k])) if o[k].shape == n[k].shape else "",
        )
print("identical:", same, "different:", diff)
