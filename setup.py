"""Build script: compiles every ``.pyx`` file under ``neurospca/``.

The compiled kernels live in ``neurospca/_kernels/`` (shared ``cdef inline``
helpers in ``_helpers.pxd``; :func:`neurospca._kernels.load` chooses between
them and their NumPy twins). New Cython modules need no edit here: any
``neurospca/**/name.pyx`` becomes the extension ``neurospca.<...>.name``.
"""

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent

# modules whose prange loops run on OpenMP threads
OPENMP_MODULES = {"neurospca._kernels._prox"}


def _openmp_flags():
    """``-fopenmp`` if the C compiler accepts it (else prange runs serially).

    Set ``NEUROSPCA_NO_OPENMP=1`` to build without OpenMP.
    """
    if os.environ.get("NEUROSPCA_NO_OPENMP"):
        return []
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "omp.c"
        src.write_text("#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n")
        try:
            res = subprocess.run(
                cc + ["-fopenmp", str(src), "-o", str(Path(tmp) / "omp")], capture_output=True
            )
        except OSError:
            return []
    if res.returncode != 0:
        print(
            "neurospca: the compiler does not support OpenMP; kernels run on one thread",
            file=sys.stderr,
        )
        return []
    return ["-fopenmp"]


#: No errno from sqrt and no floating-point traps (none are enabled): the
#: compiler may then inline sqrt and use branch-free min/max selects. Neither
#: changes a result (unlike -ffast-math): the kernels' outputs are bit for bit
#: those of -O3 alone, and one dual iteration is 5-7 % faster
#: (benchmarks/RESULTS.md).
FP_FLAGS = ["-fno-math-errno", "-fno-trapping-math"]


def _extensions():
    exts = []
    omp = _openmp_flags()
    for pyx in sorted((HERE / "neurospca").rglob("*.pyx")):
        rel = pyx.relative_to(HERE).with_suffix("")
        name = ".".join(rel.parts)
        flags = omp if name in OPENMP_MODULES else []
        exts.append(
            Extension(
                name,
                [str(pyx.relative_to(HERE))],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] + FP_FLAGS + flags,
                extra_link_args=flags,
            )
        )
    return cythonize(
        exts,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )


setup(ext_modules=_extensions())
