"""The outputs of a fit: loadings, scores, model and report written into one output
folder, all or nothing."""

import csv
import datetime
import os
import time

from .. import persistence
from .._utils.io import AtomicFolder
from ._checks import OUTPUT_FILE, say

__all__ = ["run_metadata", "write_all"]


def run_metadata(args, title, data):
    """Metadata saved with the model: title, data description, command, time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``argv``).
    title : str
        Report title.
    data : dict
        Data description (label -> value).

    Returns
    -------
    dict
    """
    return {
        "title": title,
        "data": data,
        "command": " ".join(["neurospca"] + args.argv),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _write_scores(path, scores, labels, first="sample"):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([first] + [f"component_{k + 1}" for k in range(scores.shape[1])])
        for label, row in zip(labels, scores, strict=True):
            writer.writerow([label] + [f"{x:.10g}" for x in row])


def write_all(
    args,
    estimator,
    space,
    *,
    meshes,
    metadata,
    sample_labels,
    bg_img=None,
    study=None,
    associations=None,
    atlas=None,
    scores=None,
):
    """Loadings, scores, model and report into ``args.output`` (all or nothing).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``output``, ``surface_format``, ``engine``).
    estimator : fitted estimator
        The model (SPCATV or another of the five).
    space : VolumeMasker or Hemispheres
        Where its columns live.
    meshes : dict or None
        Surface meshes to draw on.
    metadata : dict
        From :func:`run_metadata`.
    sample_labels : list of str
        One per sample (rows of scores.csv).
    bg_img : str, optional
        Background of the report's volume slices.
    study : dict, optional
        The participants side of a cohort fit: its participant IDs label the
        rows of scores.csv (first column ``participant_id``); saved with the
        model and shown in the report.
    associations : pandas.DataFrame, optional
        Written as associations.tsv.
    atlas : path or pair of paths, optional
        Labels of the report's peaks and clusters.
    scores : ndarray of shape (n_samples, n_components), optional
        The rows of scores.csv; default SPCA-TV's training scores
        (:func:`neurospca.reporting.component_scores`).

    Returns
    -------
    str
        The output folder.
    """
    from ..reporting import images, report, report_job

    with AtomicFolder(args.output, owned=OUTPUT_FILE, name="--output") as folder:
        tmp = folder.tmp
        say(args, "writing loadings, scores and model ...")
        first = "sample"
        if study is not None:
            sample_labels, first = [str(i) for i in study["participant_ids"]], "participant_id"
        metadata = dict(metadata, sample_labels=list(sample_labels))
        persistence.save_model(
            estimator,
            os.path.join(tmp, "model.npz"),
            space=space,
            meshes=meshes,
            metadata=metadata,
            study=study,
        )
        job = report_job(  # the demo's report worker draws while the files are written
            getattr(args, "report_worker", None),
            os.path.join(tmp, "model.npz"),
            os.path.join(tmp, "report.html"),
            engine=getattr(args, "engine", "auto"),
            bg_img=bg_img,
            scores=scores,
            atlas=atlas,
            note=lambda line: say(args, line),
        )
        names = [
            os.path.basename(p)
            for p in images.save_loadings(
                estimator.components_,
                space,
                tmp,
                surface_format=getattr(args, "surface_format", "gii"),
            )
        ]
        _write_scores(
            os.path.join(tmp, "scores.csv"),
            report.component_scores(estimator) if scores is None else scores,
            sample_labels,
            first,
        )
        extra = []
        if associations is not None:
            from .study import write_associations

            write_associations(os.path.join(tmp, "associations.tsv"), associations)
            extra.append("associations.tsv")
        say(args, "drawing the report ...")
        t0 = time.perf_counter()
        if job is None or not job.written():
            html = report.make_report(
                estimator,
                space,
                meshes=meshes,
                title=metadata["title"],
                data_description=metadata.get("data"),
                bg_img=bg_img,
                engine=getattr(args, "engine", "auto"),
                metadata=metadata,
                study=study,
                scores=scores,
                **({} if atlas is None else {"atlas": atlas}),
            )
            report.save_report(html, os.path.join(tmp, "report.html"))
        say(args, f"report drawn in {time.perf_counter() - t0:.1f} s")
        written = names + ["scores.csv"] + extra + ["model.npz", "report.html"]
        out = folder.commit(written)
    print(f"wrote {', '.join(written)} to {out}")
    print(f"open the report: file://{os.path.join(out, 'report.html')}")
    return out
