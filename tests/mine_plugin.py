"""pytest, run on a student's pieces (``MYTORCH_MINE`` set): name the pieces behind a failure.

mytorch counts each call of a student's piece (``mytorch.mine.CALLS``). Around every test this
plugin notes which of the student's pieces ran. When a test that ran several of them fails, it
runs again with each piece swapped back to the reference in turn: the piece whose swap makes the
test pass is named, in both languages, as the one that differs from PyTorch. The run ends with a
count per piece of the tests that used it and did not fail because of it (written as JSON to
``MYTORCH_MINE_REPORT`` for ``make mine``).
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

ACTIVE = bool(os.environ.get("MYTORCH_MINE", "").strip() not in ("", "0"))
_TALLY: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # piece -> [passed, run]
_USAGE: dict[str, set[str]] = defaultdict(set)  # piece -> ids of the tests that ran it


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    if not ACTIVE:
        yield
        return
    from mytorch.mine import CALLS

    before = dict(CALLS)
    yield
    item._mine_pieces = sorted(n for n, c in CALLS.items() if c != before.get(n, 0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    used = getattr(item, "_mine_pieces", None)
    if not ACTIVE or report.when != "call" or used is None:
        return
    blamed = _culprits(item, used) if report.failed and used else []
    report.user_properties.append(("mine_pieces", used))
    report.user_properties.append(("mine_blamed", blamed))
    if report.failed and used:
        from mytorch._pieces import REGISTRY

        def name(n: str) -> str:
            return f"`{n}`（练习 {REGISTRY[n].exercise}）" if n in REGISTRY else f"`{n}`"

        def name_en(n: str) -> str:
            return f"`{n}` (exercise {REGISTRY[n].exercise})" if n in REGISTRY else f"`{n}`"

        if blamed and set(blamed) != set(used) or len(used) == 1:
            text = (f"和 PyTorch 不一致：你的零件 {'、'.join(map(name, blamed or used))}——换回参考实现，"
                    "这个测试就通过了。\n"
                    f"Differs from PyTorch: your piece {', '.join(map(name_en, blamed or used))} — "
                    "with the reference version in its place, this test passes.")
        else:
            text = (f"这个测试用到了你写的零件 {'、'.join(map(name, used))}，问题出在它们之中。\n"
                    f"This test ran your pieces {', '.join(map(name_en, used))}; the problem is "
                    "among them.")
        report.sections.append(("your pieces / 你的零件", text))


def _culprits(item: pytest.Item, used: list[str]) -> list[str]:
    """The pieces whose reference version, swapped in alone, makes the failing test pass."""
    from mytorch._pieces import activate, pieces

    if len(used) == 1:
        return list(used)
    found = []
    for name in used:
        current = getattr(pieces, name)
        activate(name, None)
        try:
            item.runtest()
            found.append(name)
        except (Exception, pytest.fail.Exception, pytest.skip.Exception):
            pass  # (pytest.fail and a failed pytest.raises raise outside Exception)
        finally:
            setattr(pieces, name, current)
    return found


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not ACTIVE or report.when != "call" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    props = dict(report.user_properties)
    used, blamed = props.get("mine_pieces", []), props.get("mine_blamed", [])
    if report.failed and not blamed:
        blamed = used
    for name in used:
        _TALLY[name][1] += 1
        _TALLY[name][0] += int(not report.failed or name not in blamed)
        _USAGE[name].add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not ACTIVE or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    path = os.environ.get("MYTORCH_MINE_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in _TALLY.items()}, f)
    usage = os.environ.get("MYTORCH_MINE_USAGE")  # `make mine CH=NN` runs only these tests next time
    if usage and _USAGE:
        try:
            with open(usage, encoding="utf-8") as f:
                known = json.load(f)
        except (OSError, ValueError):
            known = {}
        known.update({k: sorted(v) for k, v in _USAGE.items()})
        with open(usage, "w", encoding="utf-8") as f:
            json.dump(known, f)
