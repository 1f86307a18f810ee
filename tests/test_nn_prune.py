"""nn.utils.prune (the pruning tutorial's API) against torch: masks, the ``_orig``/``_mask``
names, forward pre-hooks, combined pruning, global pruning, ``remove`` and the errors."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import mytorch


def _prune(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.prune")


def _model(lib):
    model = lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(16, 5))
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return model


STEPS = {
    "l1_fraction": lambda P, m: P.l1_unstructured(m[3], "weight", amount=0.3),
    "l1_count_bias": lambda P, m: P.l1_unstructured(m[3], "bias", amount=2),
    "ln_structured_l2": lambda P, m: P.ln_structured(m[0], "weight", amount=0.5, n=2, dim=0),
    "ln_structured_l1_dim1": lambda P, m: P.ln_structured(m[0], "weight", amount=1, n=1, dim=1),
    "ln_structured_inf": lambda P, m: P.ln_structured(m[3], "weight", amount=0.4, n=float("inf"), dim=-1),
    "twice_container": lambda P, m: (P.l1_unstructured(m[3], "weight", amount=0.2),
                                     P.ln_structured(m[3], "weight", amount=0.4, n=2, dim=0),
                                     P.l1_unstructured(m[3], "weight", amount=0.3)),
    "global": lambda P, m: P.global_unstructured(((m[0], "weight"), (m[3], "weight")),
                                                 pruning_method=P.L1Unstructured, amount=0.25),
    "global_after_l1": lambda P, m: (P.l1_unstructured(m[0], "weight", amount=0.5),
                                     P.global_unstructured(((m[0], "weight"), (m[3], "weight")),
                                                           pruning_method=P.L1Unstructured, amount=40)),
    "custom_and_identity": lambda P, m: (P.custom_from_mask(m[3], "bias", m[3].bias > 0),
                                         P.identity(m[0], "bias")),
    "importance_scores": lambda P, m: P.l1_unstructured(m[3], "weight", amount=0.5,
                                                        importance_scores=m[3].weight.flip(1)),
    "remove": lambda P, m: (P.l1_unstructured(m[3], "weight", amount=0.3), P.remove(m[3], "weight")),
}


def _run(lib, step):
    P, m = _prune(lib), _model(lib)
    STEPS[step](P, m)
    x = lib.from_numpy(np.random.default_rng(1).standard_normal((3, 2, 4, 4)).astype(np.float32))
    y = m(x)
    y.sum().backward()
    return {"buffers": sorted(n for n, _ in m.named_buffers()),
            "params": sorted(n for n, _ in m.named_parameters()),
            "hooks": [type(h).__name__ for mod in m for h in mod._forward_pre_hooks.values()],
            "pruned": P.is_pruned(m),
            "masks": [b.numpy() for _, b in sorted(m.named_buffers())],
            "y": y.detach().numpy(),
            "grads": [p.grad.numpy() for _, p in sorted(m.named_parameters())]}


@pytest.mark.parametrize("step", list(STEPS))
def test_pruning_matches_torch(step):
    mine, ref = _run(mytorch, step), _run(torch, step)
    for k in ("buffers", "params", "hooks", "pruned"):
        assert mine[k] == ref[k], k
    for k in ("masks", "grads"):
        for a, b in zip(mine[k], ref[k]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(mine["y"], ref["y"], rtol=1e-5, atol=1e-5)


def test_random_pruning_removes_the_amount():
    P = _prune(mytorch)
    mytorch.manual_seed(0)
    lin = P.random_unstructured(mytorch.nn.Linear(10, 10), "weight", amount=0.3)
    assert int((lin.weight_mask == 0).sum()) == 30 and bool((lin.weight[lin.weight_mask == 0] == 0).all())
    conv = P.random_structured(mytorch.nn.Conv2d(3, 8, 3), "weight", amount=3, dim=0)
    assert int((conv.weight_mask.sum(dim=(1, 2, 3)) == 0).sum()) == 3
    assert P.BasePruningMethod.prune(P.L1Unstructured(0.5), mytorch.tensor([1.0, -3.0, 0.5, 2.0])).tolist() == \
        [0.0, -3.0, 0.0, 2.0]


ERRORS = [
    ("amount_type", lambda P, m: P.l1_unstructured(m[3], "weight", amount="0.3")),
    ("amount_range", lambda P, m: P.l1_unstructured(m[3], "weight", amount=1.5)),
    ("amount_negative", lambda P, m: P.l1_unstructured(m[3], "weight", amount=-1)),
    ("amount_too_many", lambda P, m: P.l1_unstructured(m[3], "bias", amount=9)),
    ("structured_1d", lambda P, m: P.ln_structured(m[3], "bias", amount=1, n=2, dim=0)),
    ("structured_dim", lambda P, m: P.ln_structured(m[3], "weight", amount=1, n=2, dim=2)),
    ("remove_unpruned", lambda P, m: P.remove(m[3], "weight")),
    ("global_structured", lambda P, m: P.global_unstructured(((m[3], "weight"),), pruning_method=P.LnStructured,
                                                             amount=1, n=2, dim=0)),
    ("global_not_iterable", lambda P, m: P.global_unstructured(3, pruning_method=P.L1Unstructured, amount=1)),
    ("importance_shape", lambda P, m: P.l1_unstructured(m[3], "weight", amount=1, importance_scores=m[3].bias)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn):
    with pytest.raises(Exception) as ref:
        fn(_prune(torch), _model(torch))
    with pytest.raises(type(ref.value)) as mine:
        fn(_prune(mytorch), _model(mytorch))
    assert str(mine.value).replace("mytorch", "torch") == str(ref.value)
