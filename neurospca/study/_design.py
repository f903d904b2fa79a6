"""What a fit learns from the participants: site harmonisation and confound removal.

:class:`StudyDesign` is fitted on the training subjects' data matrix and
their rows of the participants table, and applied unchanged to new subjects
(``transform``): nothing is re-estimated on held-out data.

- Encoding. Numeric columns are used as numbers (centred on the training
  mean); text, boolean and categorical columns are one-hot encoded against a
  reference level (the first in sorted order), one indicator per other level.
  ``encoding_`` states it column by column.
- Harmonisation (``harmonize``, a site column): ComBat
  (:func:`~neurospca.study.combat_fit`), preserving the confounds, the groups
  and the covariates of interest.
- Confounds (``confounds``): their effect on every feature is estimated by
  least squares on the training subjects jointly with the groups and
  covariates of interest (so that a diagnosis correlated with age is not
  removed with age), and only the confounds' part is subtracted.
"""

import numpy as np

from ._combat import combat_apply, combat_fit
from ._participants import category_values, check_columns, is_categorical, numeric_values

__all__ = ["StudyDesign"]


class StudyDesign:
    """Confounds, site harmonisation, groups and covariates of a cohort fit.

    Parameters
    ----------
    confounds : list of str
        Columns whose effects are removed.
    harmonize : str or None
        The site column (ComBat).
    groups : list of str
        Categorical columns compared between (preserved by the adjustments).
    covariates : list of str
        Numeric columns of interest (preserved unless also confounds).
    id_column : str, default="participant_id"
    """

    def __init__(
        self, confounds=(), harmonize=None, groups=(), covariates=(), id_column="participant_id"
    ):
        self.confounds = list(confounds)
        self.harmonize = harmonize
        self.groups = list(groups)
        self.covariates = list(covariates)
        self.id_column = id_column

    # ------------------------------------------------------------------
    # encoding
    # ------------------------------------------------------------------

    def _check(self, rows):
        """Columns present and typed as used; returns nothing (errors name the argument)."""
        self.confounds = check_columns(rows, self.confounds, "confounds", self.id_column)
        self.groups = check_columns(rows, self.groups, "groups", self.id_column)
        self.covariates = check_columns(rows, self.covariates, "covariates", self.id_column)
        if self.harmonize is not None:
            if not isinstance(self.harmonize, str):
                raise TypeError(f"harmonize must be one column name, got {self.harmonize!r}.")
            check_columns(rows, [self.harmonize], "harmonize", self.id_column)
            both = [
                c for c in self.confounds + self.groups + self.covariates if c == self.harmonize
            ]
            if both:
                raise ValueError(
                    f"harmonize: column {self.harmonize!r} is also given as a "
                    "confound, group or covariate; ComBat already removes the "
                    "site effect."
                )
        for col in self.covariates:
            numeric_values(rows, col, "covariates")
        for col in self.groups:
            if np.unique(category_values(rows, col)).size < 2:
                raise ValueError(f"groups: column {col!r} has a single value; nothing to compare.")

    def _fit_encoding(self, rows):
        self.levels_, self.means_, names, self.encoding_ = {}, {}, [], []
        for col in (
            self.confounds
            + [g for g in self.groups if g not in self.confounds]
            + [c for c in self.covariates if c not in self.confounds]
        ):
            if col in self.groups or is_categorical(rows[col]):
                levels = np.unique(category_values(rows, col))
                self.levels_[col] = levels
                names += [f"{col}[{lv}]" for lv in levels[1:]]
                self.encoding_.append(
                    f"{col}: one-hot, reference '{levels[0]}' (indicator columns "
                    + ", ".join(f"{col}[{lv}]" for lv in levels[1:])
                    + ")"
                )
            else:
                self.means_[col] = float(numeric_values(rows, col, "confounds").mean())
                names.append(col)
                self.encoding_.append(
                    f"{col}: numeric, centred on the training mean {self.means_[col]:.4g}"
                )
        self.columns_ = names

    def _encode(self, rows, columns, argument):
        blocks = []
        for col in columns:
            if col in self.levels_:
                levels = self.levels_[col]
                values = category_values(rows, col)
                unknown = sorted(set(values) - set(levels))
                if unknown:
                    raise ValueError(
                        f"{argument}: column {col!r} has value(s) {unknown[:5]} "
                        f"not seen at fit (levels {[str(x) for x in levels]})."
                    )
                blocks.append((values[:, None] == levels[None, 1:]).astype(np.float64))
            else:
                blocks.append((numeric_values(rows, col, argument) - self.means_[col])[:, None])
        n = len(rows)
        return np.hstack(blocks) if blocks else np.zeros((n, 0))

    def _matrices(self, rows):
        """(confounds, preserved) encoded matrices of ``rows``."""
        kept = [g for g in self.groups if g not in self.confounds] + [
            c for c in self.covariates if c not in self.confounds
        ]
        return (
            self._encode(rows, self.confounds, "confounds"),
            self._encode(rows, kept, "groups/covariates"),
        )

    # ------------------------------------------------------------------
    # fit / transform
    # ------------------------------------------------------------------

    def fit_transform(self, X, rows):
        """Learn the harmonisation and the confound effects; return the adjusted data.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        rows : pandas.DataFrame
            The participants' rows, in the order of ``X``'s rows.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        self._check(rows)
        self._fit_encoding(rows)
        C, K = self._matrices(rows)
        if (
            np.linalg.matrix_rank(np.hstack([np.ones((len(rows), 1)), C, K]))
            < 1 + C.shape[1] + K.shape[1]
        ):
            raise ValueError(
                "confounds/groups/covariates: the encoded columns ("
                + ", ".join(self.columns_)
                + ") are collinear (e.g. a score that is a "
                "function of the diagnosis, or a constant column); drop one of them."
            )
        X = np.asarray(X, dtype=np.float64)
        self.combat_ = None
        if self.harmonize is not None:
            sites = category_values(rows, self.harmonize)
            name = f"harmonize: column '{self.harmonize}'"
            self.combat_ = combat_fit(X, sites, np.hstack([C, K]), name=name)
            X = combat_apply(X, sites, np.hstack([C, K]), self.combat_, name=name)
        self.confound_beta_ = np.zeros((C.shape[1], X.shape[1]))
        if C.shape[1]:
            D = np.hstack([np.ones((X.shape[0], 1)), C, K])
            if np.linalg.matrix_rank(D) < D.shape[1]:
                raise ValueError(
                    "confounds: the confound columns are collinear with each "
                    "other or with the groups/covariates (rank-deficient "
                    "design); drop one."
                )
            beta = np.linalg.lstsq(D, X, rcond=None)[0]
            self.confound_beta_ = beta[1 : 1 + C.shape[1]]
            X = X - C @ self.confound_beta_
        return X

    def transform(self, X, rows):
        """Apply the training subjects' harmonisation and confound effects to new rows.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        rows : pandas.DataFrame
            The new subjects' rows (same columns as at fit).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        for arg, cols in (
            ("confounds", self.confounds),
            ("groups", self.groups),
            ("covariates", self.covariates),
            ("harmonize", [] if self.harmonize is None else [self.harmonize]),
        ):
            check_columns(rows, cols, arg, self.id_column)
        C, K = self._matrices(rows)
        X = np.asarray(X, dtype=np.float64)
        if self.combat_ is not None:
            X = combat_apply(
                X,
                category_values(rows, self.harmonize),
                np.hstack([C, K]),
                self.combat_,
                name=f"harmonize: column '{self.harmonize}'",
            )
        return X - C @ self.confound_beta_ if C.shape[1] else X

    def describe(self):
        """Sentences for the report's methods: what was done to the data.

        Returns
        -------
        list of str
        """
        out = []
        if self.harmonize is not None:
            kept = (
                ", ".join(
                    self.confounds
                    + [c for c in self.groups + self.covariates if c not in self.confounds]
                )
                or "none"
            )
            out.append(
                f"Sites ({self.harmonize!r}, {len(self.combat_['sites'])} sites) "
                "harmonised with ComBat (parametric empirical Bayes, location and "
                f"scale), preserving: {kept}; parameters learnt on the training "
                "subjects."
            )
        if self.confounds:
            out.append(
                "Confounds regressed out of every feature (least squares on the "
                "training subjects, jointly with the groups and covariates of "
                f"interest, only the confounds' part removed): "
                f"{', '.join(self.confounds)}."
            )
        if self.encoding_:
            out.append("Encoding: " + "; ".join(self.encoding_) + ".")
        return out

    # ------------------------------------------------------------------
    # storage (arrays and JSON values only)
    # ------------------------------------------------------------------

    def to_dict(self):
        """The fitted design as arrays, strings and lists (for :func:`neurospca.save_model`).

        Returns
        -------
        dict
        """
        return {
            "confounds": list(self.confounds),
            "harmonize": self.harmonize,
            "groups": list(self.groups),
            "covariates": list(self.covariates),
            "id_column": self.id_column,
            "levels": {k: np.asarray(v, dtype=str) for k, v in self.levels_.items()},
            "means": dict(self.means_),
            "columns": list(self.columns_),
            "encoding": list(self.encoding_),
            "confound_beta": self.confound_beta_,
            "combat": None if self.combat_ is None else dict(self.combat_),
        }

    @classmethod
    def from_dict(cls, state):
        """The design back from :meth:`to_dict`.

        Parameters
        ----------
        state : dict
            What :meth:`to_dict` returned (e.g. from a saved model).

        Returns
        -------
        StudyDesign
        """
        out = cls(
            state["confounds"],
            state["harmonize"],
            state["groups"],
            state["covariates"],
            state["id_column"],
        )
        out.levels_ = {k: np.asarray(v).astype(str) for k, v in state["levels"].items()}
        out.means_ = {k: float(v) for k, v in state["means"].items()}
        out.columns_ = list(state["columns"])
        out.encoding_ = list(state["encoding"])
        out.confound_beta_ = np.asarray(state["confound_beta"], dtype=np.float64)
        out.combat_ = state["combat"]
        if out.combat_ is not None:
            out.combat_ = {k: np.asarray(v) for k, v in out.combat_.items()}
        return out
