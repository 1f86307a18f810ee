"""Streams and events (``torch.cuda.Stream``, ``torch.cuda.Event``).

A GPU runs the kernels queued on a *stream* in order, while the Python program goes on: a
kernel call returns before the GPU has done anything. That is why timing GPU code needs events
recorded on the stream and a ``synchronize`` before reading them (see ``time_cuda``). On a real
GPU these wrap CuPy's streams and events; on the simulated device work finishes when the call
returns, so a stream is always idle and an event holds the host clock at ``record``.
"""
from __future__ import annotations

import time
from typing import Any

from .._device import device as _device
from ._lazy import backend, backend_or_none, device_index

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream"]

_HINT = ("(mytorch: no CUDA device; set MYTORCH_SIMULATE_CUDA=1 or call mytorch.cuda.simulate() "
         "to practise with a simulated one)")
_current: dict[int, "Stream"] = {}  # simulated device: the current stream of each device


class Stream:
    """An ordered queue of GPU work on one device (``priority``: lower runs first)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        if backend_or_none() is None:
            raise RuntimeError(f"torch.cuda.Stream requires CUDA support {_HINT}")
        b = backend()
        self.device_index = device_index(device)
        self.priority = priority
        self._null = kwargs.get("_null", False)
        self._cupy: Any = None
        if not b.simulated:
            with b.xp.cuda.Device(self.device_index):
                self._cupy = kwargs.get("_cupy") or b.xp.cuda.Stream(non_blocking=False,
                                                                    priority=priority)

    @property
    def device(self) -> Any:
        return _device("cuda", self.device_index)

    def query(self) -> bool:
        """True when everything queued on the stream has finished."""
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait until everything queued on the stream has finished."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        """Later work on this stream waits for ``event`` (the host does not wait)."""
        if self._cupy is not None and event._cupy is not None:
            self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        if self._cupy is not None:
            return self._cupy is other._cupy or self._cupy.ptr == other._cupy.ptr
        return self is other or (self._null and other._null
                                 and self.device_index == other.device_index)

    def __hash__(self) -> int:
        return hash((self.device_index, self._cupy.ptr if self._cupy is not None else id(self)))

    def __repr__(self) -> str:
        ptr = hex(self._cupy.ptr) if self._cupy is not None else ("0x0" if self._null else hex(id(self)))
        return f"<torch.cuda.Stream device=cuda:{self.device_index} cuda_stream={ptr}>"


class Event:
    """A marker in a stream: ``record`` it, then ``synchronize`` / ``query`` / ``elapsed_time``."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        if backend_or_none() is None:
            raise RuntimeError(f"Tried to instantiate dummy base class Event {_HINT}")
        b = backend()
        self.enable_timing, self.blocking = enable_timing, blocking
        self._cupy: Any = None if b.simulated else b.xp.cuda.Event(
            block=blocking, disable_timing=not enable_timing, interprocess=interprocess)
        self._time: float | None = None
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Put the marker at the end of ``stream``'s queue (the current stream by default)."""
        stream = current_stream() if stream is None else stream
        self._recorded = True
        if self._cupy is not None:
            self._cupy.record(stream._cupy)
        else:
            self._time = time.perf_counter()

    def query(self) -> bool:
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait until the GPU has reached the marker."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event`` (both recorded and reached)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self._cupy is not None:
            return float(backend().xp.cuda.get_elapsed_time(self._cupy, end_event._cupy))
        return (end_event._time - self._time) * 1e3  # type: ignore[operator]

    def __repr__(self) -> str:
        return f"<torch.cuda.Event {'recorded' if self._recorded else 'uninitialized'}>"


def default_stream(device: Any = None) -> Stream:
    """The device's null stream, which synchronises with the other streams."""
    b = backend()
    idx = device_index(device)
    if b.simulated:
        return Stream(idx, _null=True)
    return Stream(idx, _cupy=b.xp.cuda.Stream.null, _null=True)


def current_stream(device: Any = None) -> Stream:
    """The stream that new GPU work on the device goes to."""
    b = backend()
    idx = device_index(device)
    if b.simulated:
        return _current.get(idx) or default_stream(idx)
    with b.xp.cuda.Device(idx):
        return Stream(idx, _cupy=b.xp.cuda.get_current_stream())


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the current stream of its device (None: nothing happens, as in torch)."""
    if stream is None:
        return
    if stream._cupy is not None:
        stream._cupy.use()
    else:
        _current[stream.device_index] = stream


class StreamContext:
    """``with mytorch.cuda.stream(s):`` queues the block's GPU work on ``s``, then restores the
    previous stream. ``None`` (or no CUDA) makes it do nothing, as in torch."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._prev: Stream | None = None

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self._prev = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None and self._prev is not None:
            set_stream(self._prev)


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)

