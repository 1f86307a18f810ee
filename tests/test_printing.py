"""repr(tensor) must be character-for-character torch's, for every dtype, shape and print option."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch

rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def default_printoptions():
    """Every test starts and ends with both libraries at their default print options."""
    mytorch.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    yield
    mytorch.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def both(arr: np.ndarray) -> tuple[str, str]:
    return repr(mytorch.from_numpy(arr.copy())), repr(torch.from_numpy(arr.copy()))


def assert_same_repr(arr: np.ndarray) -> None:
    mine, ref = both(arr)
    assert mine == ref, f"\nmytorch:\n{mine}\ntorch:\n{ref}"


f32, f64 = np.float32, np.float64
ARRAYS = {
    "fixed": np.array([1.5, 2.25, -3.125], f32),
    "integral_floats": np.array([1.0, 2.0, -3.0], f32),
    "rounding": np.array([0.12345, 0.99995, 1 / 3], f32),
    "sci_ratio": np.array([1e-3, 1.0, 2e3], f32),
    "sci_large": np.array([1e9, 2e9], f32),
    "sci_small": np.array([1e-5, 3e-5], f32),
    "large_integral": np.array([1e8, 3.0], f64),
    "nan_inf": np.array([np.nan, 1.0, -np.inf, np.inf], f32),
    "nan_inf_fraction": np.array([np.nan, 1.5, -np.inf], f32),
    "only_nonfinite": np.array([np.nan, np.inf, -np.inf], f32),
    "zeros": np.zeros(4, f32),
    "negative_zero": np.array([-0.0, 1.0], f32),
    "negative_zero_fraction": np.array([-0.0, 0.5], f32),
    "negative_zero_sci": np.array([-0.0, 1e-7], f32),
    "scalar": np.array(3.14159, f32),
    "scalar_int_valued": np.array(2.0, f32),
    "scalar_nan": np.array(np.nan, f32),
    "scalar_int": np.array(7, np.int64),
    "scalar_bool": np.array(True),
    "float64": np.array([1.0, 2.5], f64),
    "float16": np.array([1.5, 2.0, 65504.0], np.float16),
    "int64": np.array([[1, -200], [3, 4]], np.int64),
    "int32": np.array([1, 2, 3], np.int32),
    "int16": np.array([-5, 5], np.int16),
    "int8": np.array([-128, 127], np.int8),
    "uint8": np.arange(300).astype(np.uint8).reshape(3, 100),
    "bool": np.array([[True, False], [False, True]]),
    "complex64": np.array([1 + 2j, -3.5 - 0.25j], np.complex64),
    "complex128_sci": np.array([1 + 2j, -3.5 - 0.25j, 1e6j], np.complex128),
    "complex_negzero": np.array([1 - 0.0j, -0.0 + 1j], np.complex64),
    "complex_scalar": np.array(1.5 - 2j, np.complex64),
    "matrix": rng.standard_normal((3, 4)).astype(f32),
    "tensor3d": rng.standard_normal((2, 3, 4)).astype(f32),
    "tensor4d": rng.standard_normal((2, 2, 2, 3)).astype(f64),
    "wide_row": np.linspace(-100, 100, 37).astype(f64),
    "wide_matrix": rng.standard_normal((3, 30)).astype(f32) * 100,
    "wide_int": np.arange(-50, 50, dtype=np.int64) * 1234567,
    "summarized_vector": np.arange(2000, dtype=f32) / 7,
    "summarized_matrix": np.arange(4000, dtype=f32).reshape(40, 100) / 3,
    "summarized_4d": rng.standard_normal((5, 6, 7, 8)).astype(f32),
    "summarized_short_dim": rng.standard_normal((2, 1000)).astype(f32),
    "summarized_int": np.arange(1001, dtype=np.int64),
    "summarized_bool": np.arange(2000) % 3 == 0,
    "summarized_complex": (rng.standard_normal(1200) + 1j).astype(np.complex64),
    "threshold_edge": np.arange(1000, dtype=f32),
    "empty": np.zeros((0,), f32),
    "empty_2d": np.zeros((0, 3), f32),
    "empty_3d": np.zeros((2, 0, 3), f64),
    "empty_int": np.zeros((0,), np.int64),
    "empty_bool": np.zeros((0,), bool),
    "single": np.array([42.0], f32),
    "column": np.arange(5, dtype=f32).reshape(5, 1) / 2,
    "row": np.arange(5, dtype=f32).reshape(1, 5) / 2,
}


@pytest.mark.parametrize("arr", list(ARRAYS.values()), ids=list(ARRAYS))
def test_repr_matches_torch(arr):
    assert_same_repr(arr)


def test_str_equals_repr():
    t = mytorch.tensor([1.0, 2.0])
    assert str(t) == repr(t) == str(torch.tensor([1.0, 2.0]))


OPTION_CASES = [
    ("precision2", dict(precision=2), ARRAYS["matrix"]),
    ("precision0", dict(precision=0), ARRAYS["fixed"]),
    ("precision8_f64", dict(precision=8), np.array([np.pi, np.e], f64)),
    ("threshold5", dict(threshold=5), np.arange(10, dtype=np.int64)),
    ("threshold5_matrix", dict(threshold=5), np.arange(30, dtype=f32).reshape(5, 6)),
    ("edgeitems1", dict(threshold=5, edgeitems=1), np.arange(60, dtype=f32).reshape(3, 4, 5)),
    ("edgeitems0", dict(threshold=5, edgeitems=0), np.arange(20, dtype=f32).reshape(4, 5)),
    ("edgeitems0_vector", dict(threshold=5, edgeitems=0), np.arange(20, dtype=f32)),
    ("linewidth40", dict(linewidth=40), ARRAYS["wide_row"]),
    ("linewidth10", dict(linewidth=10), np.arange(12, dtype=np.int64)),
    ("sci_on", dict(sci_mode=True), ARRAYS["fixed"]),
    ("sci_on_int_valued", dict(sci_mode=True), ARRAYS["integral_floats"]),
    ("sci_off", dict(sci_mode=False), ARRAYS["sci_ratio"]),
    ("sci_off_small", dict(sci_mode=False), ARRAYS["sci_small"]),
    ("profile_short", dict(profile="short"), ARRAYS["summarized_matrix"]),
    ("profile_full", dict(profile="full"), np.arange(1500, dtype=np.int64)),
    ("profile_short_override", dict(profile="short", precision=6), ARRAYS["matrix"]),
]


@pytest.mark.parametrize("opts,arr", [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES])
def test_printoptions_match_torch(opts, arr):
    mytorch.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    assert_same_repr(arr)
    assert mytorch._tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()


def test_set_printoptions_resets_sci_mode_and_keeps_others():
    mytorch.set_printoptions(precision=2, sci_mode=True)
    mytorch.set_printoptions(linewidth=100)
    opts = mytorch._tensor_str.get_printoptions()
    assert opts["precision"] == 2 and opts["linewidth"] == 100 and opts["sci_mode"] is None


def test_printoptions_context_manager():
    t = mytorch.tensor([1.23456])
    with mytorch._printing.printoptions(precision=1):
        assert repr(t) == "tensor([1.2])"
    assert repr(t) == "tensor([1.2346])"


# ------------------------------------------------------------------------ suffixes
def test_requires_grad_and_grad_fn_suffixes():
    a = mytorch.tensor([1.0, 2.0], requires_grad=True)
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(a) == repr(ta)
    assert repr(a + 1) == repr(ta + 1)
    assert repr(a * a) == repr(ta * ta)
    assert repr(a.double() * 2) == repr(ta.double() * 2)
    assert repr(a.detach()) == repr(ta.detach())


def test_suffix_wraps_to_a_new_line():
    arr = rng.standard_normal((2, 8)).astype(f64)
    m = mytorch.from_numpy(arr.copy()).requires_grad_()
    t = torch.from_numpy(arr.copy()).requires_grad_()
    assert repr(m * 1) == repr(t * 1)
    assert repr(m * 1).endswith(",\n       dtype=torch.float64, grad_fn=<MulBackward0>)")


def test_default_dtype_changes_the_dtype_suffix():
    try:
        mytorch.set_default_dtype(mytorch.float64)
        torch.set_default_dtype(torch.float64)
        for arr in (np.array([1.5], f64), np.array([1.5], f32), np.array([1 + 1j], np.complex128),
                    np.zeros(0, f64), np.zeros(0, np.int64)):
            assert_same_repr(arr)
    finally:
        mytorch.set_default_dtype(mytorch.float32)
        torch.set_default_dtype(torch.float32)


def test_simulated_cuda_device_suffix():
    from mytorch import _device

    saved = (_device._CUDA.backend, _device._CUDA.probed)
    try:
        mytorch.cuda.simulate(True)
        t = mytorch.tensor([1.0, 2.0], device="cuda")
        assert repr(t) == "tensor([1., 2.], device='cuda:0')"
        assert repr(mytorch.tensor([1, 2], dtype=mytorch.int32, device="cuda:1")) == \
            "tensor([1, 2], device='cuda:1', dtype=torch.int32)"
    finally:
        _device._CUDA.backend, _device._CUDA.probed = saved


# ------------------------------------------------------------------------ property tests
magnitudes = st.sampled_from([1e-12, 1e-6, 1e-3, 1.0, 1e2, 1e5, 1e9, 1e20])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hnp.arrays(st.sampled_from([np.float32, np.float64]),
                  hnp.array_shapes(min_dims=0, max_dims=3, max_side=7),
                  elements=st.floats(-1.0, 1.0, width=32) | st.sampled_from([np.nan, np.inf, -0.0])),
       magnitudes, st.booleans())
def test_random_floats_match_torch(arr, scale, integral):
    with np.errstate(over="ignore"):
        arr = np.asarray(arr * scale, dtype=arr.dtype)
    if integral:
        arr = np.asarray(np.round(arr), dtype=arr.dtype)
    assert_same_repr(arr)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint8, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=3, max_side=8)))
def test_random_ints_and_bools_match_torch(arr):
    assert_same_repr(arr)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 40), st.integers(1, 60), st.integers(0, 4),
       st.integers(20, 120))
def test_random_layouts_and_options_match_torch(ndim, side, threshold, edgeitems, linewidth):
    shape = tuple([side] + [max(1, side // 3)] * (ndim - 1))
    arr = np.random.default_rng(side).standard_normal(shape).astype(f32) * 10
    opts = dict(threshold=threshold, edgeitems=edgeitems, linewidth=linewidth)
    mytorch.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    assert_same_repr(arr)
