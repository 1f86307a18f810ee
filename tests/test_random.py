"""Random numbers: generators and seeding, the samplers' shapes/dtypes/errors (against torch) and
their statistics (mytorch does not reproduce torch's stream, so values are checked statistically)."""
import numpy as np
import pytest
import torch
from oracle import check_raises

import mytorch
from mytorch import _device

N = 100_000


def stats(t):
    a = t.double().numpy() if t.dtype.is_floating_point else t.numpy().astype(np.float64)
    return a.mean(), a.std()


# ------------------------------------------------------------------------ generators
def test_manual_seed_makes_every_sampler_reproducible():
    def draw():
        x = mytorch.empty(5)
        return [mytorch.rand(4), mytorch.randn(2, 3), mytorch.randint(0, 10, (5,)), mytorch.randperm(7),
                mytorch.normal(mytorch.zeros(3), 2.0), mytorch.multinomial(mytorch.ones(6), 3),
                mytorch.bernoulli(mytorch.full((5,), 0.5)), x.uniform_(), x.clone().normal_(),
                x.clone().exponential_(), mytorch.rand(3, dtype=mytorch.complex64)]
    assert mytorch.manual_seed(123) is mytorch.default_generator
    first = draw()
    mytorch.manual_seed(123)
    second = draw()
    for a, b in zip(first, second, strict=True):
        assert a.tolist() == b.tolist()
    mytorch.manual_seed(124)
    assert mytorch.rand(4).tolist() != first[0].tolist()


def test_initial_seed_and_seed():
    mytorch.manual_seed(7)
    assert mytorch.initial_seed() == 7 == torch.manual_seed(7).initial_seed()
    assert mytorch.manual_seed(-1).initial_seed() == torch.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    s = mytorch.seed()
    assert mytorch.initial_seed() == s
    assert isinstance(s, int) and 0 <= s < 2 ** 64


def test_manual_seed_out_of_range():
    check_raises(lambda t: t.manual_seed(2 ** 64))
    check_raises(lambda t: t.Generator().manual_seed(-2 ** 63 - 1))


def test_explicit_generator_leaves_the_default_alone():
    mytorch.manual_seed(0)
    before = mytorch.get_rng_state()
    g = mytorch.Generator().manual_seed(5)
    a = mytorch.rand(10, generator=g)
    mytorch.randn(3, generator=g), mytorch.randint(3, (4,), generator=g), mytorch.randperm(5, generator=g)
    mytorch.empty(3).uniform_(generator=g)
    assert mytorch.get_rng_state().tolist() == before.tolist()
    assert mytorch.rand(10, generator=mytorch.Generator().manual_seed(5)).tolist() == a.tolist()


def test_state_round_trip():
    g = mytorch.Generator().manual_seed(99)
    mytorch.randn(3, generator=g)  # advance, and leave half of a 64-bit word cached:
    mytorch.randint(0, 2, (1,), dtype=mytorch.int32, generator=g)
    state = g.get_state()
    assert state.dtype is mytorch.uint8 and state.dim() == 1
    a = mytorch.rand(6, generator=g)
    g.manual_seed(1)
    g.set_state(state)
    assert mytorch.rand(6, generator=g).tolist() == a.tolist()
    assert g.initial_seed() == 99
    mytorch.set_rng_state(state)
    assert mytorch.rand(6).tolist() == a.tolist()


@pytest.mark.parametrize("fn", [
    lambda t: t.Generator().set_state(t.zeros(3)),
    lambda t: t.Generator().set_state(t.zeros(3, dtype=t.uint8)),
    lambda t: t.Generator("meta"),
], ids=["float_state", "wrong_size", "meta"])
def test_state_errors(fn):
    check_raises(fn)


def test_generator_device_and_fork_rng():
    assert mytorch.Generator().device == mytorch.device("cpu")
    mytorch.manual_seed(3)
    with mytorch.random.fork_rng():
        mytorch.rand(100)
    after = mytorch.rand(3)
    mytorch.manual_seed(3)
    assert mytorch.rand(3).tolist() == after.tolist()


# ------------------------------------------------------------------------ shapes and dtypes
SHAPE_CASES = [
    ("rand_varargs", lambda t: t.rand(2, 3)),
    ("rand_tuple", lambda t: t.rand((2, 3))),
    ("rand_list", lambda t: t.rand([4])),
    ("rand_size", lambda t: t.rand(t.Size([2, 1, 3]))),
    ("rand_0d", lambda t: t.rand(())),
    ("rand_empty", lambda t: t.rand(0, 3)),
    ("rand_f64", lambda t: t.rand(3, dtype=t.float64)),
    ("rand_f16", lambda t: t.rand(3, dtype=t.float16)),
    ("rand_c64", lambda t: t.rand(3, dtype=t.complex64)),
    ("rand_grad", lambda t: t.rand(3, requires_grad=True)),
    ("randn", lambda t: t.randn(4, 5)),
    ("randn_c128", lambda t: t.randn(2, dtype=t.complex128)),
    ("randn_grad", lambda t: t.randn(2, requires_grad=True, dtype=t.float64)),
    ("randint_high", lambda t: t.randint(5, (3, 2))),
    ("randint_low_high", lambda t: t.randint(-3, 5, (3,))),
    ("randint_kw_size", lambda t: t.randint(3, 5, size=(2,))),
    ("randint_f32", lambda t: t.randint(5, (2,), dtype=t.float32)),
    ("randint_bool", lambda t: t.randint(0, 2, (2,), dtype=t.bool)),
    ("randint_u8", lambda t: t.randint(0, 256, (2,), dtype=t.uint8)),
    ("randperm", lambda t: t.randperm(6)),
    ("randperm_0", lambda t: t.randperm(0)),
    ("randperm_f32", lambda t: t.randperm(4, dtype=t.float32)),
    ("normal_tt", lambda t: t.normal(t.zeros(3), t.ones(2, 1))),
    ("normal_tf", lambda t: t.normal(t.zeros(2, 2, dtype=t.float64), 2.0)),
    ("normal_ft", lambda t: t.normal(1.0, t.ones(3))),
    ("normal_ff", lambda t: t.normal(0.0, 1.0, (2, 3))),
    ("normal_ff_dtype", lambda t: t.normal(0.0, 1.0, size=(2,), dtype=t.float64)),
    ("normal_mixed_dtype", lambda t: t.normal(t.zeros(3), t.ones(3, dtype=t.float64))),
    ("multinomial_1d", lambda t: t.multinomial(t.ones(5), 3)),
    ("multinomial_2d", lambda t: t.multinomial(t.ones(4, 5, dtype=t.float64), 7, True)),
    ("multinomial_method", lambda t: t.ones(2, 3).multinomial(3)),
    ("bernoulli", lambda t: t.bernoulli(t.full((2, 3), 0.3))),
    ("bernoulli_p", lambda t: t.bernoulli(t.zeros(3, dtype=t.float64), 0.5)),
    ("bernoulli_method", lambda t: t.full((4,), 0.5).bernoulli()),
    ("poisson", lambda t: t.poisson(t.full((2, 2), 3.0))),
    ("rand_like", lambda t: t.rand_like(t.zeros(2, 3, dtype=t.float64))),
    ("randn_like_dtype", lambda t: t.randn_like(t.zeros(2), dtype=t.float16)),
    ("randint_like_high", lambda t: t.randint_like(t.zeros(3), 5)),
    ("randint_like_low_high", lambda t: t.randint_like(t.zeros(3, dtype=t.int32), 2, 5)),
    ("uniform_", lambda t: t.zeros(2, 3).uniform_(-1, 1)),
    ("normal_", lambda t: t.zeros(3, dtype=t.float64).normal_(2, 3)),
    ("random_long", lambda t: t.zeros(3, dtype=t.long).random_()),
    ("random_to", lambda t: t.zeros(3).random_(5)),
    ("random_from_to", lambda t: t.zeros(3, dtype=t.int16).random_(-4, 4)),
    ("exponential_", lambda t: t.zeros(3).exponential_(2.0)),
    ("bernoulli_long", lambda t: t.zeros(3, dtype=t.long).bernoulli_(0.5)),
    ("bernoulli_tensor_p", lambda t: t.zeros(2, 3).bernoulli_(t.full((3,), 0.4))),
    ("geometric_", lambda t: t.zeros(3, dtype=t.int32).geometric_(0.3)),
    ("cauchy_", lambda t: t.zeros(3).cauchy_()),
    ("log_normal_", lambda t: t.zeros(3, dtype=t.float64).log_normal_()),
]


@pytest.mark.parametrize("fn", [c[1] for c in SHAPE_CASES], ids=[c[0] for c in SHAPE_CASES])
def test_shape_dtype_requires_grad_like_torch(fn):
    m, t = fn(mytorch), fn(torch)
    assert tuple(m.shape) == tuple(t.shape)
    assert str(m.dtype) == str(t.dtype)
    assert m.requires_grad == t.requires_grad


# ------------------------------------------------------------------------ errors
ERROR_CASES = [
    ("rand_no_size", lambda t: t.rand()),
    ("rand_float_size", lambda t: t.rand(2, 3.0)),
    ("rand_negative", lambda t: t.rand(-2)),
    ("rand_long", lambda t: t.rand(2, dtype=t.int64)),
    ("randn_long", lambda t: t.randn(2, dtype=t.int64)),
    ("rand_like_long", lambda t: t.rand_like(t.zeros(2, dtype=t.long))),
    ("randint_empty_range", lambda t: t.randint(5, 3, (2,))),
    ("randint_int_size", lambda t: t.randint(5, 2)),
    ("randint_u8_overflow", lambda t: t.randint(0, 300, (3,), dtype=t.uint8)),
    ("randint_bool_overflow", lambda t: t.randint(5, (2,), dtype=t.bool)),
    ("randint_grad", lambda t: t.randint(5, (2,), requires_grad=True)),
    ("randperm_negative", lambda t: t.randperm(-1)),
    ("randperm_bool", lambda t: t.randperm(3, dtype=t.bool)),
    ("normal_no_size", lambda t: t.normal(0.0, 1.0)),
    ("normal_negative_std", lambda t: t.normal(t.zeros(3), -1.0)),
    ("normal_negative_std_tensor", lambda t: t.normal(0.0, t.tensor([1.0, -1.0]))),
    ("normal_negative_std_ff", lambda t: t.normal(2.0, -1.0, (2,))),
    ("normal_long_mean", lambda t: t.normal(t.zeros(3, dtype=t.long), 1.0)),
    ("normal_bad_broadcast", lambda t: t.normal(t.zeros(3), t.ones(2))),
    ("multinomial_too_many", lambda t: t.multinomial(t.ones(3), 4)),
    ("multinomial_zero", lambda t: t.multinomial(t.ones(3), 0)),
    ("multinomial_3d", lambda t: t.multinomial(t.ones(2, 2, 3), 1)),
    ("multinomial_0d", lambda t: t.multinomial(t.tensor(1.0), 1)),
    ("multinomial_all_zero", lambda t: t.multinomial(t.zeros(3), 1)),
    ("multinomial_negative", lambda t: t.multinomial(t.tensor([1.0, -1.0]), 1)),
    ("multinomial_nan", lambda t: t.multinomial(t.tensor([1.0, float("nan")]), 1)),
    ("multinomial_inf", lambda t: t.multinomial(t.tensor([1.0, float("inf")]), 1)),
    ("multinomial_long", lambda t: t.multinomial(t.tensor([1, 2]), 1)),
    ("bernoulli_p_out_of_range", lambda t: t.bernoulli(t.tensor([0.5, 2.0]))),
    ("bernoulli_scalar_p", lambda t: t.bernoulli(t.tensor([0.5, 1.0]), 1.5)),
    ("bernoulli_long", lambda t: t.bernoulli(t.tensor([1, 0]))),
    ("bernoulli__p", lambda t: t.zeros(3).bernoulli_(1.5)),
    ("bernoulli__tensor_p", lambda t: t.zeros(3).bernoulli_(t.tensor([0.5, 1.5, 0.1]))),
    ("bernoulli__broadcast", lambda t: t.zeros(2, 3).bernoulli_(t.tensor([0.5, 0.5]))),
    ("poisson_negative", lambda t: t.poisson(t.tensor([1.0, -1.0]))),
    ("poisson_long", lambda t: t.poisson(t.tensor([1, 2]))),
    ("uniform_long", lambda t: t.zeros(3, dtype=t.long).uniform_()),
    ("uniform_reversed", lambda t: t.zeros(3).uniform_(2, 1)),
    ("normal__long", lambda t: t.zeros(3, dtype=t.long).normal_()),
    ("normal__negative_std", lambda t: t.zeros(3).normal_(0, -1)),
    ("exponential_long", lambda t: t.zeros(3, dtype=t.long).exponential_()),
    ("exponential_negative", lambda t: t.zeros(3).exponential_(-1)),
    ("random_reversed", lambda t: t.zeros(3).random_(5, 2)),
    ("random_u8_to", lambda t: t.zeros(3, dtype=t.uint8).random_(0, 300)),
    ("random_u8_from", lambda t: t.zeros(3, dtype=t.uint8).random_(-1, 5)),
    ("random_i8", lambda t: t.zeros(3, dtype=t.int8).random_(0, 300)),
    ("geometric_zero", lambda t: t.zeros(3).geometric_(0)),
    ("cauchy_long", lambda t: t.zeros(3, dtype=t.long).cauchy_()),
    ("log_normal_long", lambda t: t.zeros(3, dtype=t.long).log_normal_()),
    ("leaf_uniform_", lambda t: t.zeros(3, requires_grad=True).uniform_()),
    ("leaf_normal_", lambda t: t.zeros(3, requires_grad=True).normal_()),
]

MESSAGE_CHECKED = {"multinomial_too_many", "randint_empty_range", "uniform_reversed",
                   "normal_negative_std", "bernoulli__p", "random_u8_to", "exponential_negative",
                   "geometric_zero", "multinomial_nan", "normal_bad_broadcast"}


@pytest.mark.parametrize("name,fn", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_like_torch(name, fn):
    err = check_raises(fn)
    if name in MESSAGE_CHECKED:
        with pytest.raises(Exception) as t_err:
            fn(torch)
        assert str(err) == str(t_err.value)


# ------------------------------------------------------------------------ statistics
@pytest.fixture
def seeded():
    mytorch.manual_seed(2024)


@pytest.mark.parametrize("name,make,mean,std", [
    ("rand", lambda: mytorch.rand(N), 0.5, (1 / 12) ** 0.5),
    ("rand_f64", lambda: mytorch.rand(N, dtype=mytorch.float64), 0.5, (1 / 12) ** 0.5),
    ("rand_f16", lambda: mytorch.rand(N, dtype=mytorch.float16), 0.5, (1 / 12) ** 0.5),
    ("randn", lambda: mytorch.randn(N), 0.0, 1.0),
    ("randn_f16", lambda: mytorch.randn(N, dtype=mytorch.float16), 0.0, 1.0),
    ("randint", lambda: mytorch.randint(-3, 7, (N,)), 1.5, ((10 ** 2 - 1) / 12) ** 0.5),
    ("normal_ff", lambda: mytorch.normal(3.0, 2.0, (N,)), 3.0, 2.0),
    ("normal_tensor", lambda: mytorch.normal(mytorch.full((N,), -1.0), mytorch.full((N,), 0.5)), -1.0, 0.5),
    ("uniform_", lambda: mytorch.empty(N).uniform_(2, 5), 3.5, (9 / 12) ** 0.5),
    ("uniform_strided", lambda: mytorch.empty(N, 2)[:, 0].uniform_(2, 5), 3.5, (9 / 12) ** 0.5),
    ("normal_", lambda: mytorch.empty(N, dtype=mytorch.float64).normal_(1, 3), 1.0, 3.0),
    ("normal_strided", lambda: mytorch.empty(2, N).t()[:, 1].normal_(1, 3), 1.0, 3.0),
    ("exponential_", lambda: mytorch.empty(N).exponential_(4.0), 0.25, 0.25),
    ("bernoulli_", lambda: mytorch.empty(N).bernoulli_(0.3), 0.3, (0.3 * 0.7) ** 0.5),
    ("bernoulli", lambda: mytorch.bernoulli(mytorch.full((N,), 0.8)), 0.8, (0.8 * 0.2) ** 0.5),
    ("geometric_", lambda: mytorch.empty(N).geometric_(0.25), 4.0, (0.75 / 0.25 ** 2) ** 0.5),
    ("poisson", lambda: mytorch.poisson(mytorch.full((N,), 6.0)), 6.0, 6 ** 0.5),
    ("random_to", lambda: mytorch.empty(N).random_(10), 4.5, ((10 ** 2 - 1) / 12) ** 0.5),
    ("log_normal_", lambda: mytorch.empty(N, dtype=mytorch.float64).log_normal_(0, 0.5),
     np.exp(0.125), ((np.exp(0.25) - 1) * np.exp(0.25)) ** 0.5),
    ("randn_complex", lambda: mytorch.randn(N, dtype=mytorch.complex64).abs() ** 2, 1.0, 1.0),
])
def test_sample_statistics(seeded, name, make, mean, std):
    if name == "randn_complex" and not hasattr(mytorch.Tensor, "abs"):
        pytest.skip("needs Tensor.abs")
    m, s = stats(make())
    assert abs(m - mean) < 5 * std / N ** 0.5 + 1e-3, (m, mean)
    assert abs(s - std) < 0.02 * std, (s, std)


def test_sample_ranges(seeded):
    assert 0 <= mytorch.rand(N).min().item() and mytorch.rand(N).max().item() < 1
    h = mytorch.rand(N, dtype=mytorch.float16)
    assert h.max().item() < 1
    r = mytorch.randint(-3, 7, (N,))
    assert r.min().item() == -3 and r.max().item() == 6
    assert mytorch.empty(N).random_(-5, 2).min().item() == -5
    assert mytorch.zeros(N, dtype=mytorch.uint8).random_().max().item() == 255
    coin = mytorch.zeros(N, dtype=mytorch.bool).random_()
    assert coin.float().mean().item() == pytest.approx(0.5, abs=0.01)
    top = mytorch.zeros(N, dtype=mytorch.float16).random_().max().item()
    assert 1024 < top <= 2048
    c = mytorch.empty(N).cauchy_(1.0, 2.0)
    assert c.median().item() == pytest.approx(1.0, abs=0.05)


def test_randperm_is_a_permutation(seeded):
    for n in (0, 1, 10, 1000):
        p = mytorch.randperm(n)
        assert sorted(p.tolist()) == list(range(n))
    assert mytorch.randperm(1000).tolist() != list(range(1000))


def test_multinomial_without_replacement_never_repeats(seeded):
    probs = mytorch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    for _ in range(200):
        s = mytorch.multinomial(probs, 5)
        for row in s.tolist():
            assert len(set(row)) == 5
    # all categories with positive weight are drawn before a zero-weight one
    full = mytorch.multinomial(probs[0], 6)
    assert full.tolist()[-1] == 5


def test_multinomial_frequencies(seeded):
    p = np.array([0.1, 0.2, 0.3, 0.4])
    s = mytorch.multinomial(mytorch.tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]]), N, True)
    assert s.dtype is mytorch.int64 and tuple(s.shape) == (2, N)
    np.testing.assert_allclose(np.bincount(s.numpy()[0], minlength=4) / N, p, atol=0.01)
    np.testing.assert_allclose(np.bincount(s.numpy()[1], minlength=4) / N, p[::-1], atol=0.01)
    # first draw without replacement follows p; zero-probability categories never appear
    first = mytorch.multinomial(mytorch.tensor([1.0, 2.0, 3.0, 4.0, 0.0]).expand(N, 5), 1)
    np.testing.assert_allclose(np.bincount(first.numpy()[:, 0], minlength=5) / N,
                               list(p) + [0.0], atol=0.01)


def test_bernoulli_tensor_probabilities(seeded):
    p = mytorch.tensor([0.0, 0.25, 1.0]).expand(N, 3)
    draws = mytorch.zeros(N, 3).bernoulli_(p)
    np.testing.assert_allclose(draws.numpy().mean(0), [0.0, 0.25, 1.0], atol=0.01)


# ------------------------------------------------------------------------ autograd
def test_samplers_carry_zero_gradients_like_torch():
    for lib in (mytorch, torch):
        m = lib.ones(3, requires_grad=True)
        s = lib.ones(3, requires_grad=True)
        out = lib.normal(m, s)
        assert type(out.grad_fn).__name__ == "NormalBackward3" or out.grad_fn.name() == "NormalBackward3"
        out.sum().backward()
        assert m.grad.tolist() == [0.0, 0.0, 0.0] and s.grad.tolist() == [0.0, 0.0, 0.0]
    assert mytorch.normal(mytorch.ones(2, requires_grad=True), 1.0).grad_fn.name() == "NormalBackward1"
    assert mytorch.normal(0.0, mytorch.ones(2, requires_grad=True)).grad_fn.name() == "NormalBackward2"
    b = mytorch.bernoulli(mytorch.full((3,), 0.5, requires_grad=True))
    assert b.grad_fn.name() == "BernoulliBackward0"


def test_inplace_sampling_on_non_leaf_and_under_no_grad():
    x = mytorch.ones(3, requires_grad=True)
    y = x * 2
    y.uniform_()
    assert y.grad_fn.name() == "UniformBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    w = mytorch.zeros(4, requires_grad=True)
    v0 = w._version
    with mytorch.no_grad():
        w.normal_()
    assert w.requires_grad and w.grad_fn is None and w._version == v0 + 1
    assert (w != 0).any().item()


def test_inplace_sampling_writes_through_views():
    base = mytorch.zeros(4, 4)
    base[1:3, ::2].uniform_(5, 6)
    arr = base.numpy()
    assert ((arr[1:3, ::2] >= 5) & (arr[1:3, ::2] < 6)).all()
    arr[1:3, ::2] = 0
    assert (arr == 0).all()


# ------------------------------------------------------------------------ devices
@pytest.fixture
def simulated_cuda():
    saved = (_device._CUDA.backend, _device._CUDA.probed)
    mytorch.cuda.simulate(True)
    yield
    _device._CUDA.backend, _device._CUDA.probed = saved


def test_random_on_simulated_cuda(simulated_cuda):
    mytorch.manual_seed(0)
    cpu = mytorch.rand(5)
    mytorch.manual_seed(0)
    gpu = mytorch.rand(5, device="cuda")
    assert gpu.device == mytorch.device("cuda", 0)
    assert gpu.cpu().tolist() == cpu.tolist()  # one stream for every device
    assert mytorch.randn(3, device="cuda").device.type == "cuda"
    assert mytorch.randint(5, (3,), device="cuda").device.type == "cuda"
    p = mytorch.ones(2, 4, device="cuda")
    assert mytorch.multinomial(p, 3).device.type == "cuda"
    assert mytorch.multinomial(p, 5, True).device.type == "cuda"
    assert mytorch.normal(mytorch.zeros(3, device="cuda"), 1.0).device.type == "cuda"
    assert mytorch.bernoulli(mytorch.full((3,), 0.5, device="cuda")).device.type == "cuda"
    x = mytorch.zeros(3, device="cuda")
    assert x.uniform_().device.type == "cuda" and x.cpu().numpy().min() >= 0
    x.bernoulli_(mytorch.full((3,), 1.0, device="cuda"))
    assert x.cpu().tolist() == [1.0, 1.0, 1.0]
    g = mytorch.Generator("cuda")
    assert g.device == mytorch.device("cuda", 0)
    with pytest.raises(RuntimeError, match="device type for generator"):
        mytorch.rand(3, generator=g)
    assert mytorch.rand(3, device="cuda", generator=g).device.type == "cuda"
