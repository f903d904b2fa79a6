"""Build script: compiles every ``.pyx`` file under ``neurospca/`` when it can.

The compiled kernels live in ``neurospca/_kernels/`` (shared ``cdef inline``
helpers in ``_helpers.pxd``; :func:`neurospca._kernels.load` chooses between
them and their NumPy twins). New Cython modules need no edit here: any
``neurospca/**/name.pyx`` becomes the extension ``neurospca.<...>.name``.

The extensions are optional: without a working C compiler (or without
Cython) the build prints ONE warning and the package is installed without
them; ``import neurospca`` then runs the NumPy twins, which give the same
results, and warns once at the first kernel it needs. The ``.pyx`` files are
turned into C at build time only (:class:`BuildExt`), so the generated C is
never listed as a source of the sdist nor copied into the wheel.

Environment: ``NEUROSPCA_NO_OPENMP=1`` builds without OpenMP (the macOS
wheels do); ``CC`` chooses the C compiler as usual.
"""

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent

# modules whose prange loops run on OpenMP threads
OPENMP_MODULES = {"neurospca._kernels._prox"}

#: No errno from sqrt and no floating-point traps (none are enabled): the
#: compiler may then inline sqrt and use branch-free min/max selects. Neither
#: changes a result (unlike -ffast-math): the kernels' outputs are bit for bit
#: those of -O3 alone, and one dual iteration is 5-7 % faster
#: (benchmarks/RESULTS.md).
FP_FLAGS = ["-fno-math-errno", "-fno-trapping-math"]

#: No debug information in the shared objects: it was 80 % of their size
#: (5.9 MB of 7 MB in the wheel's kernels). -g never changes the generated
#: code (GCC and Clang), so the kernels and their results are those of -g.
SIZE_FLAGS = ["-g0"]


CYTHON_DIRECTIVES = {
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}


def _compiler_command():
    """The C compiler command: ``$CC`` or Python's, as a list of words."""
    return shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")


def _compiles(command, tmp):
    """Whether ``command`` (a compiler invocation) succeeds; never raises."""
    try:
        return subprocess.run(command, capture_output=True, cwd=tmp, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _openmp_flags():
    """``-fopenmp`` if the C compiler accepts it (else prange runs serially).

    Silent when there is no working compiler at all (``CC=/bin/false``): the
    build then warns once, in :class:`BuildExt`. Set ``NEUROSPCA_NO_OPENMP=1``
    to build without OpenMP.
    """
    if os.environ.get("NEUROSPCA_NO_OPENMP"):
        return []
    cc = _compiler_command()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "plain.c").write_text("int main(void){return 0;}\n")
        Path(tmp, "omp.c").write_text(
            "#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n"
        )
        if not _compiles(cc + ["plain.c", "-o", "plain"], tmp):
            return []
        if _compiles(cc + ["-fopenmp", "omp.c", "-o", "omp"], tmp):
            return ["-fopenmp"]
    print("neurospca: the compiler does not support OpenMP; kernels run on one thread")
    return []


def _extensions():
    """One :class:`Extension` per ``.pyx`` file, with ``.pyx`` sources (cythonized later)."""
    exts = []
    for pyx in sorted((HERE / "neurospca").rglob("*.pyx")):
        rel = pyx.relative_to(HERE)
        name = ".".join(rel.with_suffix("").parts)
        exts.append(
            Extension(
                name,
                [rel.as_posix()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] + FP_FLAGS + SIZE_FLAGS,
                # setuptools then skips a missing one when it copies the
                # kernels into the source tree (editable installs)
                optional=True,
            )
        )
    return exts


class BuildExt(build_ext):
    """Cythonize at build time; an extension that cannot be built is skipped.

    The first failure (no C compiler, no Cython, no NumPy headers) prints one
    warning and the remaining extensions are not tried: the package works
    without them (the NumPy twins).
    """

    def finalize_options(self):
        # the four kernels compile side by side (one per CPU) unless -j says otherwise
        if self.parallel is None:
            self.parallel = True
        super().finalize_options()
        self._failure = None

    def build_extensions(self):
        # self.compiler exists now (build_ext.run made it): probe it before
        # spending ~20 s turning the .pyx into C
        try:
            self._probe_compiler()
            self._prepare()
        except (ImportError, OSError, *_compile_errors()) as exc:
            self._skip(exc)  # ImportError: no Cython or no NumPy at build time
            return
        super().build_extensions()

    def _probe_compiler(self):
        """Compile a one-line C file with the build's compiler (raises CompileError)."""
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, "probe.c")
            src.write_text("int neurospca_probe(void) { return 0; }\n")
            self.compiler.compile([str(src)], output_dir=tmp)

    def _prepare(self):
        """Add the NumPy headers and OpenMP flags, then turn the ``.pyx`` into C."""
        import numpy as np
        from Cython.Build import cythonize

        omp = _openmp_flags()
        for ext in self.extensions:
            ext.include_dirs.append(np.get_include())
            if ext.name in OPENMP_MODULES:
                ext.extra_compile_args += omp
                ext.extra_link_args += omp
        for ext in self.extensions:
            (c_ext,) = cythonize(
                [ext],
                language_level=3,
                compiler_directives=CYTHON_DIRECTIVES,
                build_dir=None if self.inplace else self.build_temp,
                quiet=True,
            )
            # setuptools' per-extension settings stay on ``ext``; only its
            # sources become the generated C (in this build command only)
            ext.sources, ext.depends = c_ext.sources, c_ext.depends

    def build_extension(self, ext):
        if self._failure is not None:
            return
        try:
            super().build_extension(ext)
        except (OSError, *_compile_errors()) as exc:
            self._skip(exc)

    def _skip(self, exc):
        """Print the one build-time warning (the first failure only)."""
        if self._failure is None:
            self._failure = exc
            print(
                "\nWARNING: neurospca: the compiled kernels could not be built "
                f"({type(exc).__name__}: {exc}). neurospca is installed without them and "
                "uses its NumPy twins (same results, slower). Install a C compiler and "
                "reinstall to get them.\n",
                file=sys.stderr,
                flush=True,
            )

    def get_outputs(self):
        """The built files only (after a failure, those built before it)."""
        return [p for p in super().get_outputs() if self._failure is None or os.path.exists(p)]

    def get_output_mapping(self):
        """As :meth:`get_outputs`, for editable installs."""
        mapping = super().get_output_mapping()
        return {k: v for k, v in mapping.items() if self._failure is None or os.path.exists(v)}


def _compile_errors():
    """The compile and link errors of setuptools' bundled distutils."""
    from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

    return (CCompilerError, CompileError, ExecError, LinkError, PlatformError)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt})
