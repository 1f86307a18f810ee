"""``BatchNorm1d`` / ``BatchNorm2d`` / ``BatchNorm3d``: normalise each channel over the batch.

In ``train()`` mode a BatchNorm layer normalises with the current batch's mean and variance and
folds them into its *buffers* ``running_mean`` / ``running_var``::

    running = (1 - momentum) * running + momentum * batch_statistic   (unbiased variance)

``momentum=None`` makes that a plain cumulative average (factor ``1 / num_batches_tracked``).
In ``eval()`` mode the running statistics are used instead, so one sample's output no longer
depends on the rest of its batch. Forgetting ``model.eval()`` before testing is a classic bug.

``SyncBatchNorm`` (chapter 12) computes the training statistics over the batches of every rank of
a process group: each rank's per-channel sums are all-reduced in the forward pass, and so are the
matching sums of the gradient in the backward pass.
"""
from __future__ import annotations

from typing import Any

import mytorch.distributed as dist

from ... import _dtype as D
from ..._creation import empty, ones, tensor, zeros
from ..._ops.shape import cat
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import init
from .._functional.normalization import batch_norm
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d"]


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: optional affine ``weight``/``bias`` (ones/zeros)
    and optional running statistics buffers."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(empty(num_features, **factory_kwargs))
            if bias:
                self.bias = Parameter(empty(num_features, **factory_kwargs))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **factory_kwargs))
            self.register_buffer("running_var", ones(num_features, **factory_kwargs))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """torch's default: ``weight = 1``, ``bias = 0`` (the identity transform)."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"  # checkpoints older than version 2 lack it
            if key not in state_dict:
                state_dict[key] = tensor(0, dtype=D.int64) if self.num_batches_tracked is None \
                    else self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        # Batch statistics in training mode, and in eval mode when there are no running stats.
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # Buffers are passed only when they are used or must be updated.
        pass_buffers = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if pass_buffers else None,
                          self.running_var if pass_buffers else None, self.weight, self.bias,
                          use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` inputs, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _AllReduceSum(Function):
    """``all_reduce`` (sum) that autograd sees through: the gradient is all-reduced as well, so
    every rank's input receives the gradient of the sum of all ranks' losses."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor, group: Any) -> Tensor:
        ctx.group = group
        out = tensor.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics cover the batches of every rank.

    While training under an initialised process group of more than one rank, each rank's
    per-channel sum, sum of squares and count are all-reduced and the mean and (biased) variance
    of the whole batch normalise every rank's share; the running statistics get the unbiased
    variance, as in BatchNorm. Otherwise (eval mode, one rank, no process group) it is a plain
    BatchNorm. Use :meth:`convert_sync_batchnorm` on a model before wrapping it in DDP.
    Unlike torch, whose SyncBatchNorm accepts only GPU inputs while training, mytorch's also runs
    on CPU tensors (its collectives run on MPI).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group: Any = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device,
                         dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        need_sync = (bn_training and self.training and dist.is_available() and dist.is_initialized()
                     and dist.get_world_size(self.process_group) > 1)
        if not need_sync:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        dims = [0, *range(2, input.dim())]          # every dimension but the channels
        count = input.numel() // input.size(1)
        local = cat([input.sum(dims), (input * input).sum(dims),
                     tensor([float(count)], dtype=input.dtype, device=input.device)])
        totals = _AllReduceSum.apply(local, self.process_group)
        c = self.num_features
        n = totals[2 * c]
        mean = totals[:c] / n
        var = totals[c:2 * c] / n - mean * mean
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                total = float(n)
                self.running_mean.mul_(1 - factor).add_(factor * mean.detach())
                self.running_var.mul_(1 - factor).add_(factor * var.detach() * (total / max(total - 1, 1)))
        shape = [1, c] + [1] * (input.dim() - 2)
        out = (input - mean.reshape(shape)) / (var.reshape(shape) + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm layer replaced by a SyncBatchNorm holding the same
        parameters and buffers (the module itself, if it is one; its children otherwise)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """A norm whose ``num_features`` is the channel dimension of its first input."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(0, eps, momentum, False, False, **factory_kwargs)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(**factory_kwargs)
            self.bias = UninitializedParameter(**factory_kwargs)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(**factory_kwargs)
            self.running_var = UninitializedBuffer(**factory_kwargs)
            self.num_batches_tracked = tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim
