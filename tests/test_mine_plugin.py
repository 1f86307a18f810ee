"""The ``make mine`` plugin's rerun that names the piece behind a failure (tests/mine_plugin.py)."""
from __future__ import annotations

import mine_plugin
import pytest

from mytorch._pieces import pieces


class _Item:
    """A stand-in for a pytest item whose test fails again through pytest's own exceptions."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def runtest(self) -> None:
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize("error", [pytest.fail.Exception("DID NOT RAISE RuntimeError"),
                                   pytest.skip.Exception("skipped"), AssertionError("differs")],
                         ids=["failed", "skipped", "assert"])
def test_a_rerun_that_fails_again_names_no_piece_and_does_not_stop_the_run(error) -> None:
    """Seen as a student: a wrong storage_record made a ``pytest.raises`` fail (pytest's Failed is
    not an Exception), the rerun let it escape, and pytest stopped with INTERNALERROR."""
    used = ["storage_record", "rebuild_tensor"]
    before = [getattr(pieces, n) for n in used]
    assert mine_plugin._culprits(_Item(error), used) == []
    assert [getattr(pieces, n) for n in used] == before


def test_a_rerun_that_passes_names_the_piece() -> None:
    assert mine_plugin._culprits(_Item(None), ["storage_record", "rebuild_tensor"]) == \
        ["storage_record", "rebuild_tensor"]
