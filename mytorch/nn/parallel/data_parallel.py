"""``DataParallel``: the idea of data parallelism inside one process.

Split the batch into one chunk per device (piece ``scatter_batch``), give every device a replica
of the module, run each replica on its chunk, and concatenate the outputs on one device (piece
``gather_outputs``). The replicas' parameters are *differentiable copies* of the module's
(``p.to(device)``), so backward sends every replica's gradient back through the copy and the
module's ``.grad`` receives their sum: the gradient of the whole batch.

One process drives every device, so on a CPU-only machine (no ``device_ids``) the module simply
runs; with CUDA devices (real, or simulated) the chunks really run on separate devices. torch now
recommends ``DistributedDataParallel`` (one process per device) instead: chapter 12.
"""
from __future__ import annotations

from typing import Any

import mytorch as torch

from ..._pieces import piece, pieces
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel", "scatter_batch", "gather_outputs", "replicate"]


@piece("09.3")
def scatter_batch(batch: "Tensor", devices: list, dim: int) -> list:
    """Split ``batch`` along ``dim`` into one chunk per device (as ``chunk`` splits: equal sizes
    but the last) and move chunk i to ``devices[i]``; there may be fewer chunks than devices."""
    n = batch.size(dim)
    per = -(-n // len(devices))                    # chunk's rule: ceil(n / k) rows in each part
    if per == 0:                                   # an empty batch: an empty part per device
        return [batch.to(device) for device in devices]
    starts = range(0, n, per)                      # the last part gets what is left
    return [batch.narrow(dim, start, min(per, n - start)).to(device)
            for start, device in zip(starts, devices)]


@piece("09.4")
def gather_outputs(outputs: list, device: "device", dim: int) -> "Tensor":
    """The replicas' outputs, moved to ``device`` and concatenated along ``dim`` (the moves are
    differentiable: backward sends each part of the gradient back to its device)."""
    sizes = [out.size(dim) for out in outputs]
    shape = list(outputs[0].shape)
    shape[dim] = sum(sizes)
    joined = outputs[0].new_empty(shape, device=device)
    start = 0
    for out, size in zip(outputs, sizes):
        joined.narrow(dim, start, size).copy_(out)  # copy_ crosses devices and is differentiable
        start += size
    return joined


def replicate(module: Module, devices: list) -> list[Module]:
    """Copies of ``module`` on ``devices`` whose parameters are differentiable copies of the
    original ones (gradients flow back to the original parameters)."""
    replicas = []
    for device in devices:
        replica = type(module).__new__(type(module))  # same class, attributes copied below
        state = replica.__dict__
        state.update(module.__dict__)
        state["_parameters"] = {name: None if p is None else p.to(device)
                                for name, p in module._parameters.items()}
        state["_buffers"] = {name: None if b is None else b.to(device)
                             for name, b in module._buffers.items()}
        state["_modules"] = {name: None if m is None else replicate(m, [device])[0]
                             for name, m in module._modules.items()}
        replicas.append(replica)
    return replicas


class DataParallel(Module):
    """Run ``module`` on chunks of the batch, one chunk per device (``device_ids``)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module, self.dim = module, dim
        if device_ids is None:
            device_ids = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        self.device_ids = [torch.device("cuda", d) if isinstance(d, int) else torch.device(d)
                           for d in device_ids]
        self.output_device = (self.device_ids[0] if self.device_ids and output_device is None else
                              None if output_device is None else
                              torch.device("cuda", output_device) if isinstance(output_device, int)
                              else torch.device(output_device))

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:  # no accelerator: nothing to split over
            return self.module(*inputs, **kwargs)
        if len(inputs) != 1 or kwargs:
            raise NotImplementedError("mytorch's DataParallel splits one tensor input")
        chunks = pieces.scatter_batch(inputs[0], self.device_ids, self.dim)
        replicas = replicate(self.module, self.device_ids[:len(chunks)])
        outputs = [replica(chunk) for replica, chunk in zip(replicas, chunks)]
        return pieces.gather_outputs(outputs, self.output_device, self.dim)


def data_parallel(module: Module, inputs: Any, device_ids: Any = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    """``DataParallel(module, device_ids, output_device, dim)(inputs)`` as one function."""
    return DataParallel(module, device_ids, output_device, dim)(inputs)
