"""Session-wide test settings.

The suite runs in parallel workers (``pytest -n 2`` on 2 cores): BLAS and
OpenMP pools are limited to one thread per worker, because oversubscribed
OpenBLAS threads spin and slow everything down by an order of magnitude.
Plots use the non-interactive Agg backend.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

from threadpoolctl import threadpool_limits  # noqa: E402

_THREAD_LIMITS = threadpool_limits(limits=1)
