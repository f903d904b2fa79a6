"""Seeded benchmark instances: re-exported from ``tests/_instances.py``.

They live with the tests, which use them too (tests never import from
benchmarks/); the scripts here keep importing ``from _instances import ...``.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests._instances import (  # noqa: E402,F401
    brainspace_rsfmri,
    example_weights,
    fmri_like,
    motor_maps,
    simulation_2d,
    support_regions,
    thickness_maps,
)
