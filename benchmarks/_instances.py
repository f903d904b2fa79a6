"""Seeded benchmark instances (shared by the benchmark scripts and tests)."""

import numpy as np

from neurospca.datasets import make_fmri_like, make_paper_simulation


def simulation_2d(seed=0):
    """The paper's 2D simulation: X (250, 10000), true patterns (3, 10000), mask."""
    return make_paper_simulation(random_state=seed)


def fmri_like(seed=0):
    """fMRI-sized instance: X (83, 64030), patterns (3, 64030), MNI 3 mm mask."""
    return make_fmri_like(random_state=seed)


def example_weights(X):
    """The reference implementation's example penalties:
    ``(l1, l2, tv) = l1_max * (0.05, 1, 0.1)`` with ``l1_max = max_j ||X_j|| / N``."""
    Xc = X - X.mean(axis=0)
    l1_max = np.sqrt((Xc**2).sum(axis=0)).max() / X.shape[0]
    return 0.05 * l1_max, 1.0 * l1_max, 0.1 * l1_max
