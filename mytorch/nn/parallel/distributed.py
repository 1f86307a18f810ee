"""``DistributedDataParallel``: one model per rank, gradients averaged during backward.

Every rank holds the same model (rank 0's weights are broadcast at construction) and runs its own
share of the batch. After ``loss.backward()`` every rank must hold the gradient of the *whole*
batch, i.e. the average of the ranks' gradients; then each optimizer takes the same step and the
models stay equal.

Averaging one parameter at a time would send many small messages; averaging everything after
backward would leave the network idle while backward computes. So the parameters are grouped
into **buckets** of about ``bucket_cap_mb`` (the piece ``assign_buckets``), in the order their
gradients become ready (the reverse of the forward order). A hook on each parameter notes when its
gradient has been accumulated; when a whole bucket is ready its gradients are flattened into one
buffer and an asynchronous ``all_reduce`` starts at once, while backward goes on computing the
gradients of earlier layers (*overlap*). The last hook waits for every bucket and writes the
averages back into ``.grad``. ``no_sync()`` skips all this for gradient accumulation.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import mytorch as torch
import mytorch.distributed as dist

from ..._pieces import piece, pieces
from ..modules.module import Module

__all__ = ["DistributedDataParallel", "assign_buckets"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's: a small first bucket starts communication early


@piece("12.3")
def assign_buckets(sizes: list, bucket_cap: int, first_bucket_cap: int) -> list:
    """Group consecutive parameters (``sizes``: their gradients' bytes, in the order the
    gradients become ready) into buckets: a bucket is closed as soon as it holds at least its
    cap (``first_bucket_cap`` for the first, ``bucket_cap`` after). Returns lists of indices."""
    buckets, current, filled, cap = [], [], 0, first_bucket_cap
    for index, size in enumerate(sizes):
        current.append(index)
        filled += size
        if filled >= cap:
            buckets.append(current)
            current, filled, cap = [], 0, bucket_cap
    if current:
        buckets.append(current)
    return buckets


class _Bucket:
    """Some parameters' gradients in one flat buffer, all-reduced together."""

    def __init__(self, params: list, index: int) -> None:
        self.params, self.index = params, index
        self.offsets, total = [], 0
        self.slot = {id(p): k for k, p in enumerate(params)}
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.buffer = torch.zeros(total, dtype=params[0].dtype, device=params[0].device)
        self.ready: set[int] = set()
        self.work: Any = None

    def put(self, p: Any) -> None:
        """Copy ``p``'s gradient into its slot (zeros if it has none)."""
        i = self.slot[id(p)]
        slot = self.buffer[self.offsets[i]:self.offsets[i] + p.numel()]
        if p.grad is None:
            slot.zero_()
        else:
            slot.copy_(p.grad.reshape(-1))
        self.ready.add(i)

    def full(self) -> bool:
        return len(self.ready) == len(self.params)


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward`` averages the gradients over all ranks."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 **kwargs: Any) -> None:
        super().__init__()
        self.module = module
        self.process_group = process_group if process_group is not None else _default_group()
        self.device_ids = device_ids
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self._params = params
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        self._buckets = self._make_buckets(list(reversed(params)))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._next = 0                # the next bucket to launch (every rank launches in order)
        self._expect_finish = False   # a forward that syncs ran; its backward has not finished
        self._started = False         # ... and that backward has begun (a gradient arrived)
        # torch's flag: buffers are broadcast before a forward when the previous forward synced
        self.require_forward_param_sync = True
        self.timeline: list[dict] | None = None  # set to [] to record launches (chapter 12)
        for p in params:
            p.register_post_accumulate_grad_hook(self._grad_ready)

    # ------------------------------------------------------------------ set up
    def _make_buckets(self, ordered: list) -> list[_Bucket]:
        groups: dict[tuple, list] = {}
        for p in ordered:  # a bucket holds one dtype on one device
            groups.setdefault((p.dtype, str(p.device)), []).append(p)
        buckets = []
        for members in groups.values():
            sizes = [p.numel() * p.element_size() for p in members]
            first = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
            for idx in pieces.assign_buckets(sizes, self.bucket_bytes_cap, first):
                buckets.append(_Bucket([members[i] for i in idx], len(buckets)))
        return buckets

    def _broadcast(self, tensors: list) -> None:
        """Rank 0's values into ``tensors`` on every rank, one message per dtype."""
        by_dtype: dict[Any, list] = {}
        for t in tensors:
            by_dtype.setdefault((t.dtype, str(t.device)), []).append(t)
        with torch.no_grad():
            for group in by_dtype.values():
                flat = torch.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, 0, group=self.process_group)
                offset = 0
                for t in group:
                    t.copy_(flat[offset:offset + t.numel()].view_as(t))
                    offset += t.numel()

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        # A backward that began and did not finish means some parameter's gradient never came.
        # (Two forwards and then one backward are fine: the second forward starts afresh.)
        if self._expect_finish and self._started:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new "
                "one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.")
        if self.device_ids:
            dev = torch.device("cuda", self.device_ids[0]) if isinstance(self.device_ids[0], int) \
                else torch.device(self.device_ids[0])
            inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs)
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        out = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = torch.is_grad_enabled() and self.require_backward_grad_sync
        if self.require_forward_param_sync:
            self._prepare_backward(out)
        return out

    def _prepare_backward(self, out: Any) -> None:
        self._next = 0
        self._expect_finish, self._started = True, False
        self._used = {id(p) for p in self._params}
        for b in self._buckets:
            b.ready.clear()
            b.work = None
        if self.find_unused_parameters:
            self._used = _reachable_leaves(out)
            for p in self._params:  # never reached by this forward: ready with a zero gradient
                if id(p) not in self._used:
                    self._mark_ready(p)

    # ------------------------------------------------------------------ backward hooks
    def _grad_ready(self, p: Any) -> None:
        if self._expect_finish:
            self._started = True
            self._mark_ready(p)

    def _mark_ready(self, p: Any) -> None:
        bucket = self._bucket_of[id(p)]
        bucket.put(p)
        while self._next < len(self._buckets) and self._buckets[self._next].full():
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, bucket: _Bucket) -> None:
        bucket.buffer.div_(dist.get_world_size(self.process_group))
        bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
        if self.timeline is not None:
            waiting = sum(len(b.params) - len(b.ready) for b in self._buckets)
            self.timeline.append({"bucket": bucket.index, "event": "launch",
                                  "time": time.perf_counter(), "grads_not_ready": waiting,
                                  "bytes": bucket.buffer.numel() * bucket.buffer.element_size()})

    def _finish(self) -> None:
        """Wait for every bucket, then write the averaged gradients into ``.grad``."""
        globally_used = None
        if self.find_unused_parameters:
            flags = torch.tensor([1 if id(p) in self._used else 0 for p in self._params],
                                 dtype=torch.int32)
            dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.process_group)
            globally_used = {id(p) for p, f in zip(self._params, flags.tolist()) if f}
        for bucket in self._buckets:
            bucket.work.wait()
            if self.timeline is not None:
                self.timeline.append({"bucket": bucket.index, "event": "done",
                                      "time": time.perf_counter()})
            with torch.no_grad():
                for p, offset in zip(bucket.params, bucket.offsets):
                    if globally_used is not None and id(p) not in globally_used:
                        continue
                    avg = bucket.buffer[offset:offset + p.numel()].view_as(p)
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
        self._expect_finish = False

    # ------------------------------------------------------------------ gradient accumulation
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forward/backward passes inside the block only accumulate local gradients; the first
        synchronised backward after it averages the accumulated sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _default_group() -> Any:
    if not dist.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return dist.GroupMember.WORLD


def _reachable_leaves(out: Any) -> set[int]:
    """ids of the leaf tensors that the graph behind ``out`` reaches."""
    roots = [t.grad_fn for t in _tensors(out) if t.grad_fn is not None]
    seen, found = set(), set()
    while roots:
        node = roots.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found.add(id(variable))
        roots.extend(n for n, _ in node.next_functions)
    return found


def _tensors(out: Any) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _tensors(v)]
    return []
