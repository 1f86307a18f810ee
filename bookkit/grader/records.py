"""What a child may send, and when: its records, in order, and deadlines it cannot move.

Everything here runs in the parent and treats the child's pipe as the student's: the child's memory
belongs to the student, so a record may be forged by student code that found the runner's ``emit``
(nonce included). A record is parsed (``parse_record``), its text made harmless where it is decoded
(``clean``: lone surrogates and control characters escaped, so no later step can fail on them or
print them raw), and checked against the one order a runner produces (``RecordClock``): ``begin``
and ``end`` of each runnable cell, in the run's order (ascending unless the parent gave one), then
``done``. A repeated or out-of-order record is malformed (the run is the student's ``error``); it
never extends a deadline. Each cell gets
``cell_timeout`` from its ``begin``, and the whole child a hard cap (start-up + cells × timeout),
so no student holds the class longer than that, whatever they send.
"""

from __future__ import annotations

import json
import re

STARTUP = 30.0  # seconds for a child to set itself up (jail, rlimits) before its first cell
DONE_GRACE = 5.0  # seconds for a child that said "done" to exit
CHECK_KINDS = ("equal", "close", "shape", "raises", "true")
END_KEYS = frozenset({"ev", "cell", "checks", "error", "part", "tamper", "violation"})

# C0 controls but tab and newline, DEL, C1 controls, surrogates (a lone one cannot be encoded),
# and the invisible characters that reorder or break what is shown (bidi controls, U+2028/9)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff"
                     "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\t\n]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` with lone surrogates, control characters (C0 but tab and newline, DEL, C1) and
    bidi controls written as escapes (``\\x1b``, ``\\ud800``): encodable as UTF-8, harmless on a
    terminal (no escape sequence, no OSC 52 clipboard write, no cursor move) and in any viewer."""
    return text if text.isprintable() else _UNSAFE.sub(_escape, text)


def printable(text: object, one_line: bool = False) -> str:
    """Any text a student controls (a file or folder name, a message), safe to show and to write:
    bytes of a name that are not UTF-8 (surrogate escapes) as ``\\xNN``, then ``clean``; with
    ``one_line``, tab and newline escaped too (a name cannot fake a line of its own)."""
    text = str(text)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte: clean() writes it out
        pass
    if one_line:
        return text if text.isprintable() else _UNSAFE_LINE.sub(_escape, text)
    return clean(text)


def clean_data(data: object) -> object:
    """Every string in a decoded JSON value cleaned (iteratively: the nesting may be deep)."""
    if isinstance(data, str):
        return clean(data)
    if not isinstance(data, (list, dict)):
        return data
    stack = [data]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            if isinstance(value, str):
                node[key] = clean(value)
            elif isinstance(value, (list, dict)):
                stack.append(value)
        if isinstance(node, dict) and any(isinstance(k, str) and not k.isprintable() for k in node):
            for key in [k for k in node if not k.isprintable()]:
                node[clean(key)] = node.pop(key)
    return data


def parse_record(line: bytes, prefix: bytes, cells: int) -> dict | str | None:
    """A record from one line; None for lines without the nonce (stdout noise is never read, but a
    student may write to any descriptor); a reason (str) for a line with the nonce that is not a
    well-formed record: only a child whose seal was broken can send one. Strings come back cleaned."""
    if not line.startswith(prefix):
        return None
    try:
        record = json.loads(line[len(prefix):].decode("utf-8"))
    except (ValueError, TypeError, MemoryError, RecursionError, UnicodeDecodeError):
        return "a record that is not JSON"
    if not isinstance(record, dict):
        return "a record that is not an object"
    ev = record.get("ev")
    if ev == "done" and len(record) == 1:
        return record
    cell = record.get("cell")
    if type(cell) is not int or not 0 <= cell < cells:
        return "a record for a cell that does not exist"
    if ev == "begin" and len(record) == 2:
        return record
    if ev != "end" or set(record) != END_KEYS:
        return "a record of an unknown form"
    error = record["error"]
    if error is not None and not (isinstance(error, list) and len(error) == 2
                                  and all(isinstance(e, str) for e in error)):
        return "a malformed error"
    notes = (record["part"], record["tamper"], record["violation"])
    if not all(v is None or isinstance(v, str) for v in notes):
        return "a malformed end record"
    checks = record["checks"]
    if not isinstance(checks, list) or not all(_check_ok(c) for c in checks):
        return "a malformed check"
    try:
        return clean_data(record)  # type: ignore[return-value]
    except (RecursionError, MemoryError):
        return "a record that is not JSON"


def _check_ok(check: object) -> bool:
    """``[kind, site, part, what_zh, what_en, got, expected, options]`` (values are decoded later)."""
    return (isinstance(check, list) and len(check) == 8 and check[0] in CHECK_KINDS
            and type(check[1]) is int and check[2] in ("visible", "hidden")
            and isinstance(check[3], str) and isinstance(check[4], str) and isinstance(check[7], list))


class RecordClock:
    """The order a child's records must come in, and the deadlines they cannot move.

    The runner sends, for each runnable cell in the run's ``order`` (ascending unless given),
    ``begin`` then ``end``, and then ``done``. Any other sequence (a second ``begin``, a cell out of
    order, an ``end`` of a cell that is not running, anything after ``done``) is malformed:
    ``accept`` returns the reason and no deadline changes. A cell's deadline is set once, by its
    own ``begin``; the child's hard cap (``start-up + runnable cells × cell_timeout``, or less when
    ``cap`` is given) never moves.
    """

    def __init__(self, cells: int, skip: frozenset[int], cell_timeout: float, now: float,
                 cap: float | None = None, startup: float | None = None,
                 timeouts: dict[int, float] | None = None, order: list[int] | None = None) -> None:
        startup = STARTUP if startup is None else startup
        self.order = [i for i in (range(cells) if order is None else order) if i not in skip]
        self.position = 0  # index in ``order`` of the next cell to begin
        self.running: int | None = None
        self.done = False
        self.timeout = cell_timeout
        self.timeouts = timeouts or {}  # cell → a shorter deadline of its own (never a longer one)
        self.began = now
        self.durations: dict[int, float] = {}  # cell → seconds from its begin to its end
        self.cap = now + startup + cell_timeout * max(len(self.order), 1)
        if cap is not None:
            self.cap = min(self.cap, cap)
        self.deadline = now + startup + cell_timeout  # start-up and the first cell

    def accept(self, record: dict, now: float) -> str:
        """'' when ``record`` comes in order (and the deadline moves on), else why it does not."""
        ev, cell = record.get("ev"), record.get("cell")
        if self.done:
            return "a record after the end of the run"
        if ev == "begin":
            if self.running is not None:
                return f"cell {cell} began again, or before cell {self.running} ended"
            if self.position >= len(self.order) or cell != self.order[self.position]:
                return f"a record for cell {cell} out of order"
            self.running, self.position = cell, self.position + 1
            self.deadline = now + min(self.timeout, self.timeouts.get(cell, self.timeout))
            self.began = now
        elif ev == "end":
            if cell != self.running:
                return f"the end of cell {cell}, which is not running"
            self.running = None
            self.durations[cell] = now - self.began
            self.deadline = now + self.timeout  # to the next cell's begin (or done): no student code
        elif ev == "done":
            if self.running is not None or self.position != len(self.order):
                return "the end of the run before its cells"
            self.done = True
            self.deadline = now + DONE_GRACE
        else:
            return "a record of an unknown form"
        return ""

    def expires(self) -> float:
        """When the child is killed if nothing changes: the running cell's deadline or the cap."""
        return min(self.deadline, self.cap)

    def capped(self, now: float) -> bool:
        """Whether the hard cap (not a cell's own deadline) is what ran out."""
        return now >= self.cap
