"""A signal stays a signal when cleanup raises while it unwinds (exit 130 / 143).

Seen in a CI rehearsal (round 18): SIGTERM landed while the model's ``.npz`` was
written; closing the ZIP file then raised ``ValueError`` ("open writing handle")
whose context was the :class:`~neurospca._utils.signals.Terminated`, and the
command said "error" with exit code 2 instead of 143.
"""

import argparse
import io
import zipfile

import pytest

from neurospca import cli
from neurospca._utils.signals import Terminated, signal_in


def _zip_left_open(signal_exc):
    """A command that is stopped while a ZIP member is being written."""

    def func(args):
        with zipfile.ZipFile(io.BytesIO(), "w") as zf:
            handle = zf.open("a.npy", "w")
            handle.write(b"x")
            raise signal_exc()

    return func


@pytest.mark.parametrize(("signal_exc", "code"), [(Terminated, 143), (KeyboardInterrupt, 130)])
def test_an_error_from_cleanup_during_a_signal_is_the_signal(capsys, signal_exc, code):
    args = argparse.Namespace(command="none", func=_zip_left_open(signal_exc))
    assert cli._run(args) == code
    err = capsys.readouterr().err
    assert "no report or model was written" in err
    assert "error" not in err


def test_an_error_without_a_signal_is_still_an_error(capsys):
    def func(args):
        with zipfile.ZipFile(io.BytesIO(), "w") as zf:
            handle = zf.open("a.npy", "w")
            handle.write(b"x")

    args = argparse.Namespace(command="none", func=func)
    assert cli._run(args) == 2
    assert "neurospca: error: Can't close the ZIP file" in capsys.readouterr().err


def test_the_signal_is_found_through_causes_and_contexts():
    stop = Terminated()
    inner = ValueError("close")
    inner.__context__ = stop
    outer = OSError("write")
    outer.__cause__ = inner
    assert signal_in(outer) is stop
    assert signal_in(ValueError("plain")) is None
    loop = ValueError("loop")
    loop.__context__ = loop
    assert signal_in(loop) is None
