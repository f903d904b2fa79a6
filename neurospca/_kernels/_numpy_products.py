"""NumPy twin of :mod:`neurospca._kernels._products` (same results, slower)."""

import numpy as np


def rmatvec_exact(B, z, out):
    """``out += B^T z`` in float64 (``B`` float32)."""
    out += np.asarray(z, dtype=np.float64) @ np.asarray(B, dtype=np.float64)
