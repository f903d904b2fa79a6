"""Build script: compiles every ``.pyx`` file under ``neurospca/``.

New Cython modules need no edit here: any ``neurospca/**/name.pyx`` becomes the
extension ``neurospca.<...>.name``.
"""
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent


def _extensions():
    exts = []
    for pyx in sorted((HERE / "neurospca").rglob("*.pyx")):
        rel = pyx.relative_to(HERE).with_suffix("")
        exts.append(
            Extension(
                ".".join(rel.parts),
                [str(pyx.relative_to(HERE))],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"],
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
