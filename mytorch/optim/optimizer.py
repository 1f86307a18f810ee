"""``Optimizer``: the base class of every optimizer, as in ``torch.optim.optimizer``.

An optimizer holds *parameter groups* and *state*:

* ``param_groups`` is a list of dicts. Each has ``"params"`` (the tensors it updates) and one
  value for every hyper-parameter (``lr``, ``momentum``...); a group that does not name one takes
  it from ``defaults``. Different groups may train at different speeds (a pretrained backbone
  at ``lr=1e-4``, a fresh head at ``1e-2``), and changing ``group["lr"]`` takes effect at once.
* ``state`` maps each parameter to its own memory (momentum buffers, running averages, a step
  count), created lazily at the first ``step``.

A subclass validates its hyper-parameters in ``__init__`` and implements ``step()``: collect the
parameters that have a gradient, then call a functional ``sgd(...)``/``adam(...)`` whose loop
applies one per-parameter rule (a *piece*, ``pieces.sgd_step``...) to each of them.

``state_dict()`` uses torch's layout, so optimizer checkpoints move between the two libraries:
parameters are replaced by integers (their position counted across the groups), ``state`` is keyed
by those integers, and ``load_state_dict`` maps them back onto this optimizer's parameters.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .._creation import tensor, zeros, zeros_like
from .._dtype import float32, float64, get_default_dtype
from .._pieces import piece, pieces
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "required"]

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


class _RequiredParameter:
    """The default of a hyper-parameter that every group must give (torch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` runs before every optimizer's ``step``."""
    return RemovableHandle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` runs after every optimizer's ``step``."""
    return RemovableHandle(_global_post_hooks, hook)


def _typename(obj: Any) -> str:
    """torch.typename: ``torch.FloatTensor`` for a tensor, else the class's (qualified) name."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ in ("builtins", "") else \
        f"{cls.__module__}.{cls.__qualname__}"


def _with_step_hooks(step: Callable) -> Callable:
    """Wrap a subclass's ``step`` so the global and per-optimizer pre/post hooks run around it."""
    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = step(self, *args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


def _use_grad_for_differentiable(step: Callable) -> Callable:
    """Run ``step`` with grad mode on only for ``differentiable=True`` optimizers (torch's rule)."""
    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        prev = is_grad_enabled()
        try:
            set_grad_enabled(bool(self.defaults.get("differentiable", False)))
            return step(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)

    return wrapper


def _to_scalar(x: Any) -> Any:
    """A 1-element tensor hyper-parameter as a Python number (what torch's kernels read)."""
    return x.item() if isinstance(x, Tensor) else x


def _scalar_dtype() -> Any:
    """The dtype of the ``step`` counters: float64 when that is the default dtype, else float32."""
    return float64 if get_default_dtype() is float64 else float32


def _closure_loss(closure: Callable[[], Any] | None) -> Any:
    """What ``step(closure)`` returns: the closure's loss, computed with grad mode on (it calls
    ``backward``), or None without a closure."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _zero_step(p: Tensor, group: dict[str, Any]) -> Tensor:
    """A new step counter: a 0-d float tensor (on the parameter's device when capturable/fused)."""
    if group.get("capturable") or group.get("fused"):
        return zeros((), dtype=float32 if group.get("fused") else _scalar_dtype(),
                     device=p.device)
    return tensor(0.0, dtype=_scalar_dtype())


def _steps_as_tensors(opt: Optimizer, group: dict[str, Any]) -> None:
    """Old checkpoints stored ``step`` as a number: make it a tensor again (torch does too)."""
    for p in group["params"]:
        s = opt.state.get(p, {})
        if len(s) != 0 and "step" in s and not isinstance(s["step"], Tensor):
            s["step"] = tensor(float(s["step"]), dtype=_scalar_dtype())


def _check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


class Optimizer:
    """Base class for all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs (``named_parameters()``),
    or of dicts (parameter groups); ``defaults`` holds the value of every hyper-parameter that a
    group does not set itself.
    """

    #: Settings that groups from an older checkpoint may lack, with the value they take on load.
    _group_defaults: tuple[tuple[str, Any], ...] = ()

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _with_step_hooks(step)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ pickling and printing
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, default in self._group_defaults:
                group.setdefault(key, default)
            _steps_as_tensors(self, group)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (e.g. layers unfrozen while fine-tuning), filling in the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or
                                                                       p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(tensors)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ the training-loop calls
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: ``None`` (the default: saves memory, and a parameter that gets
        no gradient is then skipped by ``step``), or zero-filled tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; ``closure`` re-computes and returns the loss."""
        raise NotImplementedError

    def _params_with_grad(self, group: dict[str, Any]) -> list[Tensor]:
        """The parameters of ``group`` that received a gradient (the others are left alone)."""
        return [p for p in group["params"] if p.grad is not None]

    def _lazy_state(self, p: Tensor, group: dict[str, Any], *buffers: str,
                    **first: Callable[[], Any]) -> dict[str, Any]:
        """``p``'s state, made at its first step: a step counter, then ``first``'s entries (each
        made by calling it), then a zero tensor per name in ``buffers``; torch's key order."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _zero_step(p, {"capturable": group.get("capturable", False),
                                           "fused": group.get("fused")})
            for name, make in first.items():
                state[name] = make()
            for name in buffers:
                state[name] = zeros_like(p)
        return state

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before ``step``; may return new ``(args, kwargs)``."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable,
                                          prepend: bool = False) -> RemovableHandle:
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable,
                                           prepend: bool = False) -> RemovableHandle:
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {id: {...}}, "param_groups": [{..., "params": [ids]}]}``.

        The tensors inside are the optimizer's own (not copies): save them, or deep-copy them
        before stepping on, if you need a snapshot.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        groups, index = pieces.pack_param_groups(self.param_groups)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take over a saved state: same number of groups of the same sizes, matched by order.

        State tensors move to their parameter's device (and floating dtype), except ``step``.
        Load the optimizer *after* building an lr scheduler on it: the scheduler's construction
        would overwrite the loaded learning rates.
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(cast(param, v) for v in value)  # type: ignore[call-arg]
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [
            update_group(g, s) for g, s in zip(groups, saved_groups)]})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


@piece("08.5")
def pack_param_groups(param_groups: list) -> tuple:
    """The groups as a state dict stores them: each parameter replaced by an integer.

    Parameters are numbered in order across all groups (0, 1, 2, ... as they appear). Returns the
    packed groups (every setting kept, ``"params"`` last, now a list of ints) and the numbering
    ``{id(param): number}``, which the caller uses to key the per-parameter state.
    """
    index: dict[int, int] = {}
    packed = []
    start = 0
    for group in param_groups:
        new = {k: v for k, v in group.items() if k != "params"}
        for number, p in enumerate(group["params"], start):
            if id(p) not in index:
                index[id(p)] = number
        new["params"] = [index[id(p)] for p in group["params"]]
        start += len(new["params"])
        packed.append(new)
    return packed, index


def _add_hook(registry: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(registry, hook)
    if prepend:
        registry.move_to_end(handle._key, last=False)
    return handle
