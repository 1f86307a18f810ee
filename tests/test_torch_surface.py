"""torch's public surface, from real torch: every public name of ``torch`` and ``torch.Tensor``
works in mytorch or is listed (with its reason) in mytorch/_unsupported.py, whose placeholders
raise ``NotImplementedError`` naming the API, never ``AttributeError``."""
from __future__ import annotations

import types
import warnings

import pytest
import torch

import mytorch
from mytorch import _unsupported

# programs here set real torch's global matmul flags (nanoGPT turns TF32 on): conftest puts them back
pytestmark = pytest.mark.usefixtures("torch_flags_put_back")


LEFT_TORCH = set(_unsupported._TORCH_NAMES)
LEFT_TENSOR = set(_unsupported._TENSOR_NAMES)


def _torch_names() -> list[str]:
    """torch's public top-level names, less the standard-library modules its __init__ imports
    and the submodules torch imports on first use (their own tests cover them)."""
    out = []
    for n in dir(torch):
        if n.startswith("_") or n in torch._lazy_modules:  # (in dir only once imported: onnx)
            continue
        v = getattr(torch, n)
        if isinstance(v, types.ModuleType) and (not v.__name__.startswith("torch") or v is torch):
            continue  # torch.os, torch.sys, torch.math..., torch.torch: not torch's API
        out.append(n)
    return out


def test_every_torch_name_is_implemented_or_listed():
    missing = [n for n in _torch_names() if n not in dir(mytorch) and n not in LEFT_TORCH]
    assert not missing, f"add these to mytorch or to mytorch/_unsupported.py: {missing}"


def test_every_tensor_name_is_implemented_or_listed():
    missing = [n for n in dir(torch.Tensor)
               if not n.startswith("_") and n not in dir(mytorch.Tensor) and n not in LEFT_TENSOR]
    assert not missing, f"add these to mytorch.Tensor or to mytorch/_unsupported.py: {missing}"


def test_the_list_names_nothing_mytorch_implements():
    """A name implemented since it was listed must leave the list (when a branch adds, say,
    sparse tensors, this test names the entries to delete)."""
    stale = sorted(n for n in LEFT_TORCH if n in dir(mytorch))
    stale += sorted(f"Tensor.{n}" for n in LEFT_TENSOR if n in dir(mytorch.Tensor))
    assert not stale, f"implemented now, remove from mytorch/_unsupported.py: {stale}"


def test_the_list_names_only_torch_names():
    assert not LEFT_TORCH - set(dir(torch)), "not torch names"
    assert not LEFT_TENSOR - set(dir(torch.Tensor)), "not torch.Tensor names"


def test_listed_tensor_properties_are_torch_properties():
    torch_props = {n for n in LEFT_TENSOR if isinstance(getattr(torch.Tensor, n), (property,
                                                                                 types.GetSetDescriptorType))}
    assert torch_props == set(_unsupported.TENSOR_PROPERTIES)


@pytest.mark.parametrize("name", sorted(LEFT_TORCH))
def test_left_out_torch_names_raise_not_implemented(name):
    stub = getattr(mytorch, name)  # no AttributeError
    with pytest.raises(NotImplementedError, match=rf"torch\.{name} \("):
        stub()


def test_left_out_tensor_names_raise_not_implemented():
    x = mytorch.zeros(2)
    for name in sorted(LEFT_TENSOR):
        with pytest.raises(NotImplementedError, match=rf"torch\.Tensor\.{name} \("):
            getattr(x, name)()
        if name not in _unsupported.TENSOR_PROPERTIES:
            with pytest.raises(NotImplementedError):
                getattr(mytorch.Tensor, name)(x)


def test_placeholders_name_submodule_functions_and_refuse_subclassing():
    with pytest.raises(NotImplementedError, match=r"mytorch does not implement torch\.jit\.script"):
        mytorch.jit.script(lambda x: x)
    with pytest.raises(NotImplementedError, match="torch.jit.ScriptModule"):
        class M(mytorch.jit.ScriptModule):  # noqa: F841
            pass


def test_tensor_placeholders_have_no_attributes():
    """Duck-typing probes of other libraries must see an AttributeError, as for torch's methods
    (matplotlib tries ``y.index.to_numpy()`` on whatever it plots)."""
    from matplotlib import cbook

    x = mytorch.arange(3.0)
    with pytest.raises(AttributeError):
        x.index.to_numpy  # noqa: B018
    xs, ys = cbook.index_of(x)
    assert list(xs) == [0, 1, 2]


def test_other_names_stay_attribute_errors():
    with pytest.raises(AttributeError):
        mytorch.no_such_function  # noqa: B018
    with pytest.raises(AttributeError):
        mytorch.zeros(1).no_such_method  # noqa: B018
    with pytest.raises(AttributeError):
        mytorch.Tensor.no_such_method  # noqa: B018
    assert not hasattr(mytorch.zeros(1), "_private_thing")


def test_dir_stays_clean():
    """Placeholders never show in dir(); mytorch.Tensor adds no public name torch.Tensor lacks
    (tests/test_api_surface.py checks the same for the modules)."""
    assert not set(dir(mytorch)) & LEFT_TORCH
    assert not set(dir(mytorch.Tensor)) & LEFT_TENSOR
    extra = {n for n in dir(mytorch.Tensor) if not n.startswith("_") and not hasattr(torch.Tensor, n)}
    assert not extra, f"not in torch.Tensor: {sorted(extra)}"


FLAGS = ["is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_sparse_csr", "is_mkldnn",
         "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia", "is_nested", "is_cpu", "is_cuda",
         "output_nr", "name"]


@pytest.mark.parametrize("flag", FLAGS)
def test_tensor_flags_as_torch(flag):
    assert repr(getattr(mytorch.ones(2, 3), flag)) == repr(getattr(torch.ones(2, 3), flag))
    assert repr(getattr(mytorch.ones(2, requires_grad=True) * 2, flag)) == \
        repr(getattr(torch.ones(2, requires_grad=True) * 2, flag))


CHEAP = {
    "is_conj": lambda t: t.ones(2).is_conj(),
    "is_distributed": lambda t: t.ones(2).is_distributed(),
    "volatile": lambda t: t.ones(2).volatile,
    "grad_dtype_int": lambda t: t.ones(2, dtype=t.int64).grad_dtype,
    "grad_dtype_non_leaf": lambda t: (t.ones(2, requires_grad=True) * 2).grad_dtype,
    "is_neg": lambda t: t.is_neg(t.ones(2)),
    "resolve_conj": lambda t: t.resolve_conj(t.arange(3.)).tolist(),
    "is_same_size": lambda t: (t.ones(2, 3).is_same_size(t.zeros(2, 3)),
                               t.is_same_size(t.ones(2), t.ones(3))),
    "is_nonzero": lambda t: t.tensor([2.0]).is_nonzero(),
    "positive": lambda t: t.positive(t.arange(3.)).tolist(),
    "positive_bool": lambda t: t.ones(2, dtype=t.bool).positive(),
    "hsplit": lambda t: [p.tolist() for p in t.arange(12.).view(3, 4).hsplit([1, 3])],
    "hsplit_1d": lambda t: [p.tolist() for p in t.hsplit(t.arange(6.), 3)],
    "hsplit_uneven": lambda t: t.hsplit(t.arange(12.).view(3, 4), 3),
    "vsplit": lambda t: [p.tolist() for p in t.vsplit(t.arange(12.).view(4, 3), 2)],
    "vsplit_1d": lambda t: t.vsplit(t.zeros(3), 1),
    "dsplit": lambda t: [p.shape for p in t.arange(24.).view(2, 3, 4).dsplit([1])],
    "dsplit_2d": lambda t: t.dsplit(t.zeros(2, 2), 1),
    "split_with_sizes": lambda t: [p.tolist() for p in t.arange(5.).split_with_sizes([2, 3])],
    "split_with_sizes_bad": lambda t: t.split_with_sizes(t.arange(5.), [2, 2]),
    "unsafe_split": lambda t: [p.tolist() for p in t.unsafe_split(t.arange(5.), 2)],
    "unsafe_chunk": lambda t: [p.tolist() for p in t.arange(6.).view(2, 3).unsafe_chunk(3, 1)],
    "typename": lambda t: (t.typename(t.ones(1)), t.typename(t.ones(1, dtype=t.long)), t.typename(1)),
    "typename_class": lambda t: t.typename(t.nn.Linear),
    "is_storage": lambda t: (t.is_storage(t.ones(1).untyped_storage()), t.is_storage(t.ones(1))),
    "constants": lambda t: (t.e, t.pi, t.inf, str(t.nan), t.newaxis),
    "inplace_function": lambda t: t.sqrt_(t.tensor([4.0, 9.0])).tolist(),
    "detach_function": lambda t: t.detach(t.ones(2, requires_grad=True)).requires_grad,
    "conv2d": lambda t: t.conv2d(t.ones(1, 1, 3, 3), t.ones(1, 1, 2, 2)).tolist(),
    "layer_norm": lambda t: t.layer_norm(t.arange(4.).view(1, 4), (4,)).tolist(),
    "rms_norm": lambda t: t.rms_norm(t.arange(4.).view(1, 4), [4], t.full((4,), 2.0), 1e-3).tolist(),
    "spmm_sparse": lambda t: t.spmm(t.eye(3).to_sparse(), t.arange(6.).view(3, 2)).tolist(),
    "spmm_dense": lambda t: t.spmm(t.eye(3), t.arange(6.).view(3, 2)).tolist(),
    "spmm_vector": lambda t: t.spmm(t.ones(3), t.ones(3, 2)),
    "max_pool2d": lambda t: t.max_pool2d(t.arange(16.).view(1, 1, 4, 4), 2).tolist(),
    "dropout_eval": lambda t: t.dropout(t.ones(3), 0.5, False).tolist(),
    "embedding": lambda t: t.embedding(t.arange(6.).view(3, 2), t.tensor([2, 0])).tolist(),
    "num_threads": lambda t: (t.set_num_threads(3), t.get_num_threads()),
    "matmul_precision": lambda t: (t.set_float32_matmul_precision("high"),
                                   t.get_float32_matmul_precision()),
    "device_modules": lambda t: (t.xpu.is_available(), t.xpu.device_count(), t.mps.is_available(),
                                 t.backends.mps.is_available(), t.backends.mps.is_built(),
                                 t.cpu.is_available(), t.cpu.device_count()),
}


@pytest.mark.parametrize("case", CHEAP)
def test_cheap_names_as_torch(case):
    fn = CHEAP[case]
    try:
        ref = fn(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)) as got:
            fn(mytorch)
        assert str(got.value) == str(e)
        return
    mine = fn(mytorch)
    if case == "constants":
        assert mine[:3] == ref[:3] and mine[3] == ref[3] and mine[4] is ref[4]
    else:
        assert repr(mine).replace("mytorch", "torch") == repr(ref)
    if case in ("num_threads", "matmul_precision"):
        torch.set_num_threads(torch.get_num_threads())  # (leave torch as it was is not needed)
    mytorch.set_float32_matmul_precision("highest")


COMPOSED = {
    "diff": (lambda t, x: t.diff(x), [(3, 5)]),
    "diff_n2_dim0": (lambda t, x: x.diff(n=2, dim=0), [(4, 3)]),
    "diff_prepend_append": (lambda t, x, a: t.diff(x, dim=0, prepend=a, append=a), [(3, 2), (1, 2)]),
    "deg2rad": (lambda t, x: t.deg2rad(x * 90), [(4,)]),
    "rad2deg": (lambda t, x: x.rad2deg(), [(4,)]),
    "logaddexp": (lambda t, x, y: t.logaddexp(x * 30, y), [(6,), (6,)]),
    "logaddexp2": (lambda t, x, y: x.logaddexp2(y * 5), [(2, 3), (3,)]),
    "cdist": (lambda t, x, y: t.cdist(x, y), [(4, 3), (5, 3)]),
    "cdist_p1_batched": (lambda t, x, y: t.cdist(x, y, p=1.0), [(2, 3, 4), (2, 2, 4)]),
    "cartesian_prod": (lambda t, x, y: t.cartesian_prod(x, y), [(3,), (2,)]),
    "block_diag": (lambda t, x, y, z: t.block_diag(x, y, z), [(2, 2), (3,), ()]),
}


@pytest.mark.parametrize("case", COMPOSED)
def test_composed_functions_values_and_gradients(case):
    import numpy as np

    fn, shapes = COMPOSED[case]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    results = []
    for lib in (mytorch, torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        (out * lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape).cos()).sum().backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in xs], str(out.dtype)))
    (mo, mg, md), (to, tg, td) = results
    assert md.replace("mytorch", "torch") == td and mo.shape == to.shape
    np.testing.assert_allclose(mo, to, rtol=1e-5, atol=1e-5)
    for m, r in zip(mg, tg, strict=True):
        np.testing.assert_allclose(m, r, rtol=1e-4, atol=1e-5)


COMPOSED_EDGES = {
    "diff_0d": lambda t: t.diff(t.tensor(1.0)),
    "diff_bool": lambda t: t.diff(t.tensor([True, False, False])).tolist(),
    "diff_int_prepend": lambda t: t.diff(t.arange(5), n=2, prepend=t.tensor([9])).tolist(),
    "deg2rad_int": lambda t: str(t.deg2rad(t.tensor([180]))),
    "logaddexp_int": lambda t: t.logaddexp(t.tensor([1, 2]), t.tensor([1, 2])),
    "logaddexp_infs": lambda t: t.logaddexp(t.tensor([-float("inf"), float("inf"), 1.0]),
                                            t.tensor([-float("inf"), float("inf"), -float("inf")])).tolist(),
    "isin_scalar": lambda t: t.isin(t.tensor([1, 2, 3]), 2).tolist(),
    "isin_scalar_elements": lambda t: t.isin(2, t.tensor([1, 2])).tolist(),
    "isin_invert": lambda t: t.isin(t.tensor([[1, 5], [2, 7]]), t.tensor([5, 7]), invert=True).tolist(),
    "cartesian_one": lambda t: t.cartesian_prod(t.tensor([1, 2])).tolist(),
    "block_diag_types": lambda t: str(t.block_diag(t.tensor(1.0), t.tensor([2, 3]), t.ones(2, 2))),
    "cdist_columns": lambda t: t.cdist(t.ones(2, 3), t.ones(2, 4)),
}


@pytest.mark.parametrize("case", COMPOSED_EDGES)
def test_composed_functions_edges_as_torch(case):
    fn = COMPOSED_EDGES[case]
    try:
        ref = fn(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(mytorch)
        return
    assert fn(mytorch) == ref


def test_device_error_classes_can_be_caught():
    assert issubclass(mytorch.OutOfMemoryError, RuntimeError)
    assert issubclass(mytorch.AcceleratorError, RuntimeError)
    try:
        raise mytorch.OutOfMemoryError("out of memory")
    except mytorch.OutOfMemoryError as e:
        assert str(e) == "out of memory"


def test_compile_returns_the_model_unchanged():
    m = mytorch.nn.Linear(2, 2)
    assert mytorch.compile(m) is m
    assert mytorch.compile(mode="max-autotune")(len) is len

    @mytorch.compile
    def f(x):
        return x + 1
    assert f(mytorch.ones(1)).item() == 2.0


def test_unknown_matmul_precision_warns_as_torch():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mytorch.set_float32_matmul_precision("fast")
    assert "is not one of 'highest', 'high', or 'medium'" in str(w[0].message)
    assert mytorch.get_float32_matmul_precision() == "highest"


def test_a_submodule_not_imported_yet_imports_on_first_use():
    """As torch does for ``torch.onnx``: ``mytorch.<submodule>`` imports it (a fresh process)."""
    import subprocess
    import sys

    code = ("import sys, mytorch\n"
            "assert 'mytorch.vision' not in sys.modules\n"
            "print(mytorch.vision.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "mytorch.vision"
