"""Saved models without pickle: one ``.npz`` file holding arrays and a JSON header.

A fitted estimator is written as a NumPy ``.npz`` archive (read back with
``allow_pickle=False``): every fitted array is stored as is (bit-identical on
reload), scalars, parameters and metadata go into a JSON document stored in
the archive as UTF-8 bytes (key ``"meta.json"``), histories such as
``gap_history_`` are stored one 2-D array per component, and other lists,
tuples and dicts item by item (objects of other types are refused: nothing
is ever pickled).
The structure operator is saved as its CSR arrays plus ``group_ptr`` and
``norm2``, a tree (hierarchical dictionary learning) as its parent array.
The space needed to put loadings back on the brain is saved too: the mask
(data and affine) for volumes, the kept vertices of each hemisphere for
surfaces, and optionally the meshes used to draw them.

Each stored type has one encode/decode pair in the codec registry
(``neurospca.persistence._codecs``); the estimators a file may hold are
listed in ``ESTIMATORS``.

Files are written to a temporary name in the target directory and then renamed,
so a saved model is complete or absent.

:func:`load_model` treats a model file as untrusted input: it reads only the
arrays its header declares, with sizes checked before decompressing
(``max_bytes``), instantiates only the classes of ``MODEL_CLASSES``, validates
parameters, restricts fitted names to ``name_``, checks every array before
building objects from it and never opens a path stored in the file.

>>> save_model(model, "model.npz", space=masker)          # doctest: +SKIP
>>> saved = load_model("model.npz")                        # doctest: +SKIP
>>> saved.estimator.components_.shape                      # doctest: +SKIP
(3, 64030)
"""

from ._archive import (  # noqa: F401 (limits of the reader)
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_HEADER_BYTES,
)
from ._codecs import CODECS, register_codec  # noqa: F401 (the codec registry)
from ._model import ESTIMATORS, MODEL_CLASSES, SavedModel, load_model, save_model  # noqa: F401

__all__ = ["SavedModel", "save_model", "load_model"]
