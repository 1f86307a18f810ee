"""``nn.Module``: the base class of every layer and every model.

A module is a tree. Each node keeps three ordered dictionaries, filled by ``__setattr__``:

* ``_parameters`` — the learnable tensors (``nn.Parameter``) it owns directly;
* ``_buffers``    — other tensors that belong to its state (running statistics, masks, ...);
* ``_modules``    — its children, which are modules themselves.

Everything else (``parameters()``, ``state_dict()``, ``to()``, ``train()``, ``repr``) is a walk over
that tree. ``__call__`` runs ``forward`` between the hooks.
"""
from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator, Mapping

from ... import _dtype as D
from ..._device import as_device
from ..._device import device as _device_cls
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...utils.hooks import RemovableHandle
from ..._pieces import piece, pieces
from ..parameter import Parameter
from ._functions import BackwardHook

__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict(strict=False)`` returns: the keys that did not line up."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_: str, num_spaces: int) -> str:
    """Indent every line but the first (blank lines stay empty): nests a child's repr."""
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line if line.strip() else "" for line in s]
    return first + "\n" + "\n".join(s)


def _typename(obj: Any) -> str:
    """torch.typename: ``'torch.FloatTensor'`` for a tensor, else the qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj.__class__
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _forward_unimplemented(self: "Module", *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules: subclass it, create layers in ``__init__``,
    compute in ``forward``, and call the module (not ``forward``) so that hooks run."""

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__ skips our own __setattr__, which needs these dicts to exist first.
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", {})

    forward: Callable[..., Any] = _forward_unimplemented

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is part of the state but not learnable (moved by ``to``; saved in
        ``state_dict`` unless ``persistent=False``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter; ``None`` reserves the name for an optional one (e.g. ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        else:
            _check_parameter(name, param)
            self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name`` (what ``self.name = module`` does)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module: "Module | None") -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> "Module":
        """The module at a dotted path such as ``"encoder.layers.0"`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at a dotted path such as ``"encoder.layers.0"`` (replacing what is there,
        or adding it to an existing parent; ``strict=True`` only replaces)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``"encoder.fc.weight"``."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn.running_mean"``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self) -> Any:
        """Override (with :meth:`set_extra_state`) to save non-tensor state in ``state_dict``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called. Please file an issue to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called. Please file an issue to report this bug.")

    # ------------------------------------------------------------------ attribute magic
    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: registered members live in the three dicts.
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        """``self.name = value``: torch's checks, then the piece :func:`register_attribute`
        files the value under the right dictionary."""
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if params is None or modules is None or buffers is None:  # before Module.__init__()
            if isinstance(value, Parameter):
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            if isinstance(value, Module):
                raise AttributeError("cannot assign module before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Parameter):
            _check_parameter(name, value)
        elif name in params and value is not None:
            raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                            "(torch.nn.Parameter or None expected)")
        elif name in modules and value is not None and not isinstance(value, Module):
            raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                            "(torch.nn.Module or None expected)")
        elif name in buffers and value is not None and not isinstance(value, (Tensor, Module)):
            raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)")
        pieces.register_attribute(self, name, value)
        if name not in buffers:
            self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks",
                     "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __dir__(self) -> list[str]:
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # ------------------------------------------------------------------ walking the tree
    def _named_members(self, get_members_fn: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        return pieces.named_members(self, get_members_fn, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter of this module (and, with ``recurse``, of its descendants), once each."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs in registration order, depth first."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator["Module"]:
        """The direct sub-modules (not grandchildren)."""
        for _, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        """Every module of the tree, ``self`` first; a shared module once (unless
        ``remove_duplicate=False``: then once per place it appears)."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """``(dotted name, module)`` for this module and every module below it (the piece
        :func:`named_modules`)."""
        return pieces.named_modules(self, memo, prefix, remove_duplicate)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every child (recursively), then on ``self``: e.g. custom initialisation."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> "Module":
        """Set ``training`` on this module and all its descendants (Dropout, BatchNorm read it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """``train(False)``: it changes layer behaviour only; it does not turn off autograd."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter: ``False`` freezes the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set every ``.grad`` to None (default) or fill it with zeros."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # ------------------------------------------------------------------ devices and dtypes
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> "Module":
        """Replace every parameter's and buffer's data by ``fn(tensor)``.

        Parameters keep their identity (``param.data = ...``), so an optimizer built before
        ``model.to(...)`` still holds the right objects; gradients are converted too.
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        pieces.apply_to_tensors(self, fn)
        return self

    def share_memory(self) -> "Module":
        """Move every parameter and buffer to shared memory, so that processes forked (or sent
        the module) afterwards all read and update the same numbers (Hogwild)."""
        return self._apply(lambda t: t.share_memory_())

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """Move and/or cast in place: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``,
        ``to(tensor)``. Only floating point (and complex) tensors change dtype.

        ``memory_format=torch.channels_last`` re-lays out the 4-D (and 5-D) tensors, e.g. conv
        weights, so that channels vary fastest in memory.
        """
        memory_format = kwargs.pop("memory_format", None)
        dev, dtype = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            dt = dtype if t.is_floating_point() or t.is_complex() else None
            if memory_format is not None and t.dim() in (4, 5):
                return t.to(dev, dt, memory_format=memory_format)
            return t.to(dev, dt)

        return self._apply(convert)

    def cuda(self, device: Any = None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: Any) -> "Module":
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before ``forward``; it may
        return new args (or ``(args, kwargs)``)."""
        handle = RemovableHandle(self._forward_pre_hooks, hook)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; returning a value replaces the output."""
        handle = RemovableHandle(self._forward_hooks, hook)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the output's gradients are known; may replace them."""
        handle = RemovableHandle(self._backward_pre_hooks, hook)
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The old, deprecated backward hook: ``hook(module, grad_input, grad_output)`` is attached
        to the autograd node that produced the module's (first) output, so ``grad_input`` are the
        gradients of *that node's* inputs, which are the module's inputs only for a one-op module.
        Use :meth:`register_full_backward_hook` instead."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return RemovableHandle(self._backward_hooks, hook)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs once the gradients w.r.t. the module's
        inputs are computed; returning a tuple replaces ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks, hook)
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """``module(x)``: pre-hooks, ``forward``, forward hooks (the piece
        :func:`call_with_hooks`), with torch's variants adapted to it: hooks that see keyword
        arguments, hooks that must run even when forward fails, and the wiring of backward hooks
        (one more pre-hook on the inputs, one more hook on the output)."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        result = None
        called_always: set = set()
        kw = dict(kwargs)

        def pre_with_kwargs(hook: Callable) -> Callable:
            def run(module: Module, a: tuple) -> Any:
                res = hook(module, a, kw)
                if res is None:
                    return None
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {res}.")
                new_args, new_kwargs = res
                kw.clear()
                kw.update(new_kwargs)
                return new_args if isinstance(new_args, tuple) else (new_args,)
            return run

        def post(hook_id: Any, hook: Callable) -> Callable:
            def run(module: Module, a: tuple, out: Any) -> Any:
                if hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    return hook(module, a, kw, out)
                return hook(module, a, out)
            return run

        def keep_result(module: Module, a: tuple, out: Any) -> None:
            nonlocal result, args
            result, args = out, a

        try:
            pre_hooks = [pre_with_kwargs(h) if i in self._forward_pre_hooks_with_kwargs else h
                         for i, h in list(self._forward_pre_hooks.items())]
            post_hooks = [keep_result] + [post(i, h) for i, h in list(self._forward_hooks.items())]
            bw_hook = None
            full_hooks = list(self._backward_hooks.values()) if self._is_full_backward_hook else []
            if full_hooks or self._backward_pre_hooks:
                bw_hook = BackwardHook(self, full_hooks, list(self._backward_pre_hooks.values()))
                pre_hooks.append(lambda m, a: bw_hook.setup_input_hook(a))
                post_hooks.append(lambda m, a, out: _output_hook(bw_hook, out))
            result = pieces.call_with_hooks(self, lambda *a: self.forward(*a, **kw), args,
                                            pre_hooks, post_hooks)
            if self._backward_hooks and self._is_full_backward_hook is False:
                self._attach_legacy_backward_hooks(args, result)
            return result
        except Exception:
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kw, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      f"exception that was silenced as another error was raised "
                                      f"in forward: {e}", stacklevel=2)
            raise

    __call__: Callable[..., Any] = _call_impl

    def _attach_legacy_backward_hooks(self, args: tuple, result: Any) -> None:
        """:meth:`register_backward_hook`'s hooks go on the ``grad_fn`` of the first output tensor,
        with torch's warnings for the cases where they then miss some gradients."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        for hook in self._backward_hooks.values():
            grad_fn.register_hook(lambda gin, gout, hook=hook: hook(self, gin, gout))
        _warn_legacy_backward_hook(args, result, grad_fn)

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        pieces.save_to_state_dict(self, destination, prefix, keep_vars)
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Every parameter and persistent buffer by dotted name: detached tensors that share
        memory with the module (copy them if you need a snapshot)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Copy this module's own entries (not its children's) from ``state_dict``."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                         persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but received "
                                  f"{type(input_param)}")
                continue
            if param.dim() == 0 and input_param.dim() == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]  # old checkpoints saved scalars as shape (1,)
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.shape} from checkpoint, the shape in current "
                                  f"model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter) and not isinstance(input_param, Parameter):
                            input_param = Parameter(input_param, requires_grad=param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                                  f"the model are {param.size()} and whose dimensions in the "
                                  f"checkpoint are {input_param.size()}, an exception occurred : "
                                  f"{ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values into the existing parameters and buffers (in place, no grad).

        ``strict=True`` raises ``RuntimeError`` listing missing and unexpected keys and shape
        mismatches; ``strict=False`` returns the missing/unexpected keys instead (shape
        mismatches still raise).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Module, local_state_dict: Mapping, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items()
                                 if k.startswith(child_prefix)}, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module's entries are loaded (it may rename
        keys of ``state_dict``, as ``weight_norm`` does for old checkpoints)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> RemovableHandle:
        if with_module:
            hook = functools.partial(hook, self)
        return RemovableHandle(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict`` (may edit the lists)."""
        return RemovableHandle(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Override to show a layer's settings inside its repr (e.g. ``in_features=3, ...``)."""
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


def _warn_legacy_backward_hook(inputs: Any, result: Any, grad_fn: Any) -> None:
    """torch's FutureWarnings for a legacy backward hook that cannot see the module's real
    gradients: its node is not the only one between the module's inputs and outputs."""
    def warn(msg: str) -> None:
        warnings.warn(msg, FutureWarning, stacklevel=4)

    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            return warn("Using non-full backward hooks on a Module that does not return a single "
                        "Tensor or a tuple of Tensors is deprecated and will be removed in future "
                        "versions. This hook will be missing some of the grad_output. Please use "
                        "register_full_backward_hook to get the documented behavior.")
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            return warn("Using non-full backward hooks on a Module that does not take as input a "
                        "single Tensor or a tuple of Tensors is deprecated and will be removed in "
                        "future versions. This hook will be missing some of the grad_input. Please "
                        "use register_full_backward_hook to get the documented behavior.")
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warn("Using a non-full backward hook when outputs are nested in python data structure is "
             "deprecated and will be removed in future versions. This hook will be missing some "
             "grad_output.")
    elif len(out_grad_fn) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd "
             "Nodes is deprecated and will be removed in future versions. This hook will be "
             "missing some grad_output. Please use register_full_backward_hook to get the "
             "documented behavior.")
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {n[0] for n in grad_fn.next_functions}:
        warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
             "deprecated and will be removed in future versions. This hook will be missing some "
             "grad_input. Please use register_full_backward_hook to get the documented behavior.")
    return None


def _parse_to(args: tuple, kwargs: dict) -> tuple[_device_cls | None, D.dtype | None]:
    """``Module.to``'s arguments → (device or None, dtype or None)."""
    kwargs = dict(kwargs)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    items = list(args) + [kwargs.pop(k) for k in ("device", "dtype", "tensor") if k in kwargs]
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: unexpected keyword "
                        f"'{next(iter(kwargs))}'")
    dev, dtype = None, None
    for a in items:
        if isinstance(a, Tensor):
            dev, dtype = a.device, a.dtype
        elif isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            dev = as_device(a)
        elif a is None or isinstance(a, bool):
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    return dev, dtype



def _check_parameter(name: str, param: Parameter) -> None:
    """torch's refusals for a parameter's name and value (shared by ``__setattr__`` and
    :meth:`Module.register_parameter`)."""
    if "." in name:
        raise KeyError('parameter name can\'t contain "."')
    if name == "":
        raise KeyError('parameter name can\'t be empty string ""')
    if param.grad_fn is not None:
        raise ValueError(
            f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
            f"created explicitly. To express '{name}' as a function of another Tensor, compute "
            "the value in the forward() method.")


def _output_hook(bw_hook: BackwardHook, out: Any) -> Any:
    """Wire a module's full backward hooks to its output (torch warns when it cannot)."""
    if not isinstance(out, (Tensor, tuple)):
        warnings.warn("For backward hooks to be called, module output should be a Tensor or a "
                      f"tuple of Tensors but received {type(out)}", stacklevel=4)
    return bw_hook.setup_output_hook(out)


# ============================================================================ the pieces (ch. 03)
@piece("03.1")
def register_attribute(module, name, value):
    """File ``module.<name> = value`` where it belongs: a Parameter in ``_parameters``, a Module
    in ``_modules``; any other value stays in the dict that already holds the name (``None`` for
    a parameter, a tensor for a buffer); failing all that it is a plain attribute. A name lives
    in one place only."""
    d = module.__dict__
    homes = [d["_parameters"], d["_modules"], d["_buffers"]]
    if isinstance(value, Parameter):
        home = d["_parameters"]
    elif isinstance(value, Module):
        home = d["_modules"]
    else:
        home = next((h for h in homes if name in h), d)
    for place in homes + [d]:
        if place is not home:
            place.pop(name, None)
    if home is d:
        object.__setattr__(module, name, value)   # (a property's setter still runs)
    else:
        home[name] = value


@piece("03.2")
def named_modules(module, memo=None, prefix="", remove_duplicate=True):
    """Yield ``(dotted name, module)`` for ``module`` and every module below it, depth first in
    the order they were registered; a module met twice (shared) comes once, unless
    ``remove_duplicate`` is False."""
    if memo is None:
        memo = set()
    if module in memo:
        return
    if remove_duplicate:
        memo.add(module)
    yield prefix, module
    for name, child in module._modules.items():
        if child is not None:
            yield from named_modules(child, memo, prefix + ("." if prefix else "") + name,
                                     remove_duplicate)


@piece("03.3")
def named_members(module, get_members, prefix="", recurse=True, remove_duplicate=True):
    """Yield ``(dotted name, member)`` for what ``get_members(m)`` lists — ``(name, member)``
    pairs, e.g. ``m._parameters.items()`` — for every module ``m`` of the tree (only ``module``
    itself without ``recurse``); ``None`` members are skipped, a shared member comes once."""
    memo = set()
    modules = named_modules(module, prefix=prefix, remove_duplicate=remove_duplicate) \
        if recurse else [(prefix, module)]
    for module_prefix, m in modules:
        for name, member in get_members(m):
            if member is None or member in memo:
                continue
            if remove_duplicate:
                memo.add(member)
            yield module_prefix + ("." if module_prefix else "") + name, member


@piece("03.4")
def call_with_hooks(module, forward, args, pre_hooks, hooks):
    """``module(*args)``: each pre-hook ``h(module, args)`` may return new args (a tuple, or one
    value); then ``forward(*args)``; then each hook ``h(module, args, result)`` may return a new
    result. Returns the result."""
    for hook in pre_hooks:
        new = hook(module, args)
        if new is not None:
            args = new if isinstance(new, tuple) else (new,)
    result = forward(*args)
    for hook in hooks:
        new = hook(module, args, result)
        if new is not None:
            result = new
    return result


@piece("03.5")
def save_to_state_dict(module, destination, prefix, keep_vars):
    """Put ``module``'s own parameters and persistent buffers (not its children's) into
    ``destination`` under ``prefix + name``: detached from the graph, unless ``keep_vars``."""
    persistent = [(k, b) for k, b in module._buffers.items()
                  if k not in module._non_persistent_buffers_set]
    for name, t in list(module._parameters.items()) + persistent:
        if t is not None:
            destination[prefix + name] = t if keep_vars else t.detach()


@piece("03.6")
def apply_to_tensors(module, fn):
    """Give ``module``'s own parameters (and their gradients) the data ``fn(tensor)`` *in
    place* — the Parameter objects stay the same, so an optimizer holding them still works —
    and replace its buffers by ``fn(buffer)``."""
    with no_grad():
        for param in module._parameters.values():
            if param is not None:
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
    for name, buf in module._buffers.items():
        if buf is not None:
            module._buffers[name] = fn(buf)
