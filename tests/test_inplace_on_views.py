"""torch's refusals of in-place changes to views: the outputs of split/chunk/unbind (functions that
return several views) and views made in no_grad mode, compared with torch (class and message)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from oracle import torch

import mytorch


def _nonleaf(lib: Any) -> Any:
    return lib.randn(4, 4, requires_grad=True) * 1


def _made_in_no_grad(lib: Any, grad_input: bool) -> None:
    a = lib.randn(4)
    with lib.no_grad():
        v = a[:2]
    v.add_(lib.randn(2, requires_grad=True) if grad_input else 1)


CASES: dict[str, Callable[[Any], Any]] = {
    "split": lambda lib: _nonleaf(lib).split(2)[1].add_(1),
    "chunk": lambda lib: _nonleaf(lib).chunk(2)[0].mul_(2),
    "unbind": lambda lib: _nonleaf(lib).unbind()[2].exp_(),
    "split_with_sizes": lambda lib: _nonleaf(lib).split([1, 3])[1].zero_(),
    "split_of_leaf": lambda lib: lib.randn(4, requires_grad=True).split(2)[0].add_(1),
    "augmented_assignment": lambda lib: _nonleaf(lib).split(2)[0].__iadd__(1),
    "inplace_relu": lambda lib: lib.nn.functional.relu(_nonleaf(lib).unbind()[0], inplace=True),
    "t_": lambda lib: _nonleaf(lib).split(2)[0].t_(),  # in-place view ops too
    "unsqueeze_": lambda lib: _nonleaf(lib).unbind()[1].unsqueeze_(0),
    "t_of_leaf_view": lambda lib: lib.randn(4, 4, requires_grad=True)[:2].t_(),
    "t_of_view": lambda lib: _nonleaf(lib)[:2].t_(),
    "row_of_iteration": lambda lib: list(_nonleaf(lib))[1].add_(1),  # iteration is unbind
    "view_of_split_output": lambda lib: _nonleaf(lib).split(2)[0][0:1].add_(1),
    # allowed: nothing requires grad, or grad mode is off, or torch marks no multi-output node
    "split_no_grad_needed": lambda lib: lib.randn(4).split(2)[0].add_(1),
    "split_then_no_grad": lambda lib: _inplace_in_no_grad(lib, _nonleaf(lib).split(2)[0]),
    "tensor_split": lambda lib: _nonleaf(lib).tensor_split(2)[0].add_(1),
    "hsplit": lambda lib: _nonleaf(lib).hsplit(2)[1].add_(1),
    "detach_of_split": lambda lib: _nonleaf(lib).split(2)[0].detach().add_(1),
    # a multi-output view of a tensor that needs no grad, changed by one that does
    "split_grad_input": lambda lib: lib.randn(4).split(2)[0].add_(lib.randn(2, requires_grad=True)),
    "no_grad_view_grad_input": lambda lib: _made_in_no_grad(lib, True),
    "no_grad_view_plain": lambda lib: _made_in_no_grad(lib, False),
}


def _inplace_in_no_grad(lib: Any, t: Any) -> None:
    with lib.no_grad():
        t.add_(1)


def _outcome(lib: Any, fn: Callable) -> Any:
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 (class and message are compared)
        return type(e).__name__, str(e)
    return "ok"


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_on_view_like_torch(name: str) -> None:
    assert _outcome(mytorch, CASES[name]) == _outcome(torch, CASES[name])
