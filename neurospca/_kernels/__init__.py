"""The compiled kernels and the one place that chooses them or their NumPy twins.

Every Cython kernel of neurospca lives in this folder (``_prox.pyx``: the
v-step solvers; ``_tree.pyx``: the tree-structured prox; ``_nspca.pyx``: the
nonnegative sparse PCA sweep; ``_products.pyx``: float32 data times float64
vectors in float64, for the data path; shared ``cdef inline`` helpers in
``_helpers.pxd``). Each has a pure NumPy twin that computes the same numbers
(``_numpy_prox.py`` here; the tree and NSPCA twins sit next to their
estimators) and the tests check they agree.

Callers get a kernel through :func:`load` only. There is one failure mode: when
a compiled module is missing (a source checkout that was not built, or an
install made without a C compiler: setup.py then skips the kernels with one
warning), the NumPy twin is used and ONE warning per process says how to build. The NumPy
twins are forced with ``kernels="numpy"`` or with the environment variable
``NEUROSPCA_KERNELS=numpy`` (read at each :func:`load`).

This package is a layer just above :mod:`neurospca._utils`: it imports only
NumPy and SciPy.
"""

import importlib
import os
import threading
import warnings

# OpenMP threads that wait at a barrier spin briefly, then sleep. The
# difference kernel meets two barriers per iteration (0.1-2 ms apart): waking
# a sleeping thread each time cost 15 % of a 2-thread iteration on meshes of
# fsaverage's size, while long spins are ruinous when anything else holds a
# core (libgomp's default spin made two threads 4-14x slower than one).
# GOMP_SPINCOUNT=1000 is ~10 us, and with PASSIVE libgomp drops even that
# when it has more threads than CPUs (benchmarks/RESULTS.md, issue 14). Read
# by libgomp when the compiled kernels first load it; the user's
# OMP_WAIT_POLICY or GOMP_SPINCOUNT are kept.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")

__all__ = ["KERNELS", "ENV_VAR", "load", "compiled_available", "kernel_threads", "forked_child"]

#: Accepted values of the ``kernels`` option of the solvers and estimators.
KERNELS = ("cython", "numpy")

#: Environment variable that forces the NumPy twins (``NEUROSPCA_KERNELS=numpy``).
ENV_VAR = "NEUROSPCA_KERNELS"

#: Kernel names and the module that holds their NumPy twin, when it is here.
_NAMES = {"prox": "._numpy_prox", "tree": None, "nspca": None, "products": "._numpy_products"}

_BUILD_HINT = (
    "reinstall neurospca where a C compiler works (the build skips the kernels "
    "without one), or, in a source checkout, run `pip install -e .` or "
    "`python setup.py build_ext --inplace` (needs a C compiler and Cython)"
)

_compiled = {}  # name -> compiled module, or the ImportError that loading raised
_warned = []  # non-empty once the missing-build warning was given


# libgomp is not fork-safe: a child made by os.fork() after a parallel region
# ran on several threads inherits a thread pool whose threads do not exist in
# it, and its next parallel region on several threads waits for them forever
# (0 % CPU, inside GOMP_parallel). One thread never touches the pool, so a
# forked child of a process that loaded the compiled kernels runs them on one
# thread (kernel_threads); the results do not change (they depend on the
# chunks of the difference kernel, never on the threads that run them).
_FORKED = []


def _after_fork_in_child():
    if not _FORKED and any(not isinstance(m, ImportError) for m in _compiled.values()):
        _FORKED.append(True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_child():
    """Whether this process was forked from one that had loaded the compiled kernels.

    Returns
    -------
    bool
        True in such a child (and its own forked children): its OpenMP
        kernels run on one thread (:func:`kernel_threads`).
    """
    return bool(_FORKED)


def kernel_threads(n_threads, capped=True):
    """The OpenMP threads a compiled kernel may run on: ``n_threads``, or 1 in a
    forked child (:func:`forked_child`), where more would hang in libgomp.

    Parameters
    ----------
    n_threads : int
        The threads asked for.
    capped : bool, default=True
        Apply the calling thread's :data:`THREAD_CAP` (False: a kernel whose
        numbers depend on its threads, the CSR dual kernel's reductions).

    Returns
    -------
    int
    """
    cap = getattr(THREAD_CAP, "cap", None) if capped else None  # this thread's cap, if any
    return 1 if _FORKED else int(n_threads) if cap is None else max(1, min(int(n_threads), cap()))


#: Per calling thread, ``THREAD_CAP.cap()``: the most OpenMP threads its kernels
#: may run on now (:func:`kernel_threads`; set by the joint finishing's
#: components side by side, :func:`neurospca.decomposition._support.each_component`).
THREAD_CAP = threading.local()


def _check_name(name):
    """Raise ValueError unless ``name`` is a kernel module."""
    if name not in _NAMES:
        raise ValueError(f"name must be one of {tuple(_NAMES)}, got {name!r}.")


def _check_choice(kernels):
    """``kernels`` after the environment: ``"cython"`` or ``"numpy"``."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}.")
    env = os.environ.get(ENV_VAR, "").strip().lower()
    if env not in ("",) + KERNELS:
        raise ValueError(
            f"the environment variable {ENV_VAR} must be one of {KERNELS} or unset, got {env!r}."
        )
    return "numpy" if env == "numpy" else kernels


def _import_compiled(name):
    """The compiled module ``neurospca._kernels._<name>``, or the ImportError."""
    if name not in _compiled:
        try:
            _compiled[name] = importlib.import_module(f"._{name}", __name__)
        except ImportError as exc:
            _compiled[name] = exc
    return _compiled[name]


def compiled_available(name):
    """Whether the compiled kernel module ``name`` can be imported.

    Parameters
    ----------
    name : {"prox", "tree", "nspca", "products"}
        The kernel module.

    Returns
    -------
    bool
        True when ``neurospca._kernels._<name>`` was built and imports.

    Raises
    ------
    ValueError
        ``name`` is not a kernel module.
    """
    _check_name(name)
    return not isinstance(_import_compiled(name), ImportError)


def load(name, kernels="cython"):
    """The kernel module ``name``: compiled, or its NumPy twin.

    The compiled module is returned unless the NumPy twin is forced
    (``kernels="numpy"`` or ``NEUROSPCA_KERNELS=numpy`` in the environment)
    or the compiled module is missing; in the latter case one warning per
    process says how to build.

    Parameters
    ----------
    name : {"prox", "tree", "nspca", "products"}
        The kernel module.
    kernels : {"cython", "numpy"}, default="cython"
        ``"numpy"`` forces the NumPy twin.

    Returns
    -------
    module or None
        The compiled module ``neurospca._kernels._<name>`` or, on the NumPy
        path, the twin module when it lives in this package (``"prox"``:
        :mod:`neurospca._kernels._numpy_prox`), else None: the caller then
        runs its own twin (``"tree"``:
        :func:`neurospca.decomposition._tree._prox_tree_core`; ``"nspca"``:
        :func:`neurospca.decomposition._nspca._sweep_numpy`).

    Raises
    ------
    ValueError
        ``name`` is not a kernel module, ``kernels`` is not one of
        :data:`KERNELS`, or ``NEUROSPCA_KERNELS`` is set to another value.
    """
    _check_name(name)
    if _check_choice(kernels) == "cython":
        mod = _import_compiled(name)
        if not isinstance(mod, ImportError):
            return mod
        if not _warned:
            _warned.append(True)
            warnings.warn(
                f"the compiled kernels of neurospca are missing ({mod}); the NumPy "
                f"twins give the same results, slower. To use the compiled kernels, "
                f"{_BUILD_HINT}; set {ENV_VAR}=numpy to silence this warning.",
                RuntimeWarning,
                stacklevel=2,
            )
    twin = _NAMES[name]
    return None if twin is None else importlib.import_module(twin, __name__)
