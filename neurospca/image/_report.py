"""The report of a fitted :class:`~neurospca.ImageSPCATV` (a mixin): the fitted
estimator, its space and meshes, the participants side and the data description
handed to :func:`neurospca.reporting.make_report`."""

from ._inputs import _HEMIS

__all__ = ["ImageReport"]


class ImageReport:
    """``generate_report`` of the image model (a mixin)."""

    def generate_report(
        self,
        title=None,
        atlas=None,
        atlas_labels=None,
        selection=None,
        command=None,
        interactive=True,
    ):
        """The HTML report of the fitted model (nilearn-style).

        Parameters
        ----------
        title : str, optional
            Default "neurospca report".
        atlas : NIfTI image/path or (left, right) annot paths/label arrays, optional
            Labels for the report's peaks and clusters (see
            :func:`neurospca.reporting.make_report`).
        atlas_labels : list or dict, optional
            Names of the atlas labels.
        selection : object, optional
            The result of ``neurospca.model_selection.select_penalty``.
        command : str, optional
            The command line that produced the model.
        interactive : bool, default=True
            The report's interactive viewer (see
            :func:`neurospca.reporting.make_report`); False gives a page with no
            script.

        Returns
        -------
        neurospca.reporting.HTMLReport
        """
        self._check_fitted()
        from ..reporting import FigureCache, HTMLReport, make_report

        extras = {
            k: v
            for k, v in (
                ("atlas", atlas),
                ("atlas_labels", atlas_labels),
                ("selection", selection),
                ("command", command),
                ("n_components_evidence", getattr(self, "n_components_evidence_", None)),
            )
            if v is not None
        }
        meshes = None
        if self.meshes_ is not None:
            from ..reporting.plotting import surface_background

            meshes = dict(self.meshes_)
            for h in _HEMIS:
                meshes[f"bg_{h}"] = surface_background(*self.meshes_[h])
        if getattr(self, "study_", None) is not None:
            extras["study"] = self._study_state()
        if getattr(self, "_figure_cache", None) is None:  # redraws reuse unchanged figures
            self._figure_cache = FigureCache()
        html = make_report(
            self.estimator_,
            self.space_,
            meshes=meshes,
            title="neurospca report" if title is None else title,
            data_description=self._data_description(),
            figure_cache=self._figure_cache,
            scores=getattr(self, "_train_scores", None),  # transform of the training data
            interactive=interactive,
            **extras,
        )
        return HTMLReport(html)

    def _data_description(self):
        desc = {
            "input": "surface images (nilearn SurfaceImage)"
            if self.meshes_ is not None
            else "NIfTI images",
            "samples (images)": self.n_samples_,
        }
        if self.standardize:
            desc["standardize"] = str(self.standardize)
        if self.smoothing_fwhm is not None:
            desc["smoothing FWHM (mm)"] = self.smoothing_fwhm
        return desc
