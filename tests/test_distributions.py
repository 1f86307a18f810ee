"""torch.distributions: Beta (and Normal, Uniform, Bernoulli, Categorical) against torch —
log_prob with gradients, moments, entropy, shapes, validation errors — and sample statistics."""
import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import Case, check, check_raises, randn

import mytorch
import mytorch.distributions as MD


def dist(lib):
    return MD if lib is mytorch else TD


rng = np.random.default_rng(1)
conc_a = (np.abs(randn(3, 4)) + 0.3).astype(np.float32)
conc_b = (np.abs(randn(4)) + 0.5).astype(np.float32)
unit_x = rng.uniform(0.02, 0.98, (3, 4)).astype(np.float32)
probs = rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
weights = rng.uniform(0.1, 1.0, (2, 5)).astype(np.float32)
_a = rng.standard_normal((3, 3))
spd3 = _a @ _a.T + np.eye(3)

CASES = [
    Case("beta_log_prob", lambda t, a, b, x: dist(t).Beta(a, b).log_prob(x), [conc_a, conc_b, unit_x],
         rtol=1e-5),
    Case("beta_log_prob_f64", lambda t, a, b, x: dist(t).Beta(a, b).log_prob(x),
         [conc_a.astype(np.float64), conc_b.astype(np.float64), unit_x.astype(np.float64)], rtol=1e-9),
    Case("beta_log_prob_concentration_one", lambda t, x: dist(t).Beta(1.0, 1.0).log_prob(x),
         [np.array([0.0, 0.5, 1.0], np.float32)], grad=False),
    Case("beta_log_prob_scalar_params", lambda t, x: dist(t).Beta(2.0, 3.5).log_prob(x), [unit_x]),
    Case("beta_mean", lambda t, a, b: dist(t).Beta(a, b).mean, [conc_a, conc_b]),
    Case("beta_mode", lambda t, a, b: dist(t).Beta(a + 1, b + 1).mode, [conc_a, conc_b]),
    Case("beta_variance", lambda t, a, b: dist(t).Beta(a, b).variance, [conc_a, conc_b]),
    Case("beta_stddev", lambda t, a, b: dist(t).Beta(a, b).stddev, [conc_a, conc_b]),
    Case("beta_entropy", lambda t, a, b: dist(t).Beta(a, b).entropy(), [conc_a, conc_b], rtol=1e-5,
         atol=1e-5),
    Case("beta_params", lambda t, a, b: (dist(t).Beta(a, b).concentration1,
                                          dist(t).Beta(a, b).concentration0), [conc_a, conc_b]),
    Case("normal_log_prob", lambda t, m, s, x: dist(t).Normal(m, s).log_prob(x),
         [randn(3, 4), conc_b, randn(2, 3, 4)]),
    Case("normal_entropy_cdf_icdf", lambda t, m, s, u: (dist(t).Normal(m, s).entropy(),
                                                       dist(t).Normal(m, s).cdf(u),
                                                       dist(t).Normal(m, s).icdf(u)),
         [randn(4), conc_b, probs[0].copy()], rtol=1e-5, atol=1e-5),
    Case("normal_moments", lambda t, m, s: (dist(t).Normal(m, s).mean, dist(t).Normal(m, s).variance,
                                            dist(t).Normal(m, s).stddev), [randn(4), conc_b]),
    Case("uniform_log_prob", lambda t, x: dist(t).Uniform(-1.0, 3.0).log_prob(x),
         [np.array([-1.0, 0.0, 2.9], np.float32)], grad=False),
    Case("uniform_moments", lambda t, lo, hi: (dist(t).Uniform(lo, lo + hi).mean,
                                               dist(t).Uniform(lo, lo + hi).variance,
                                               dist(t).Uniform(lo, lo + hi).entropy(),
                                               dist(t).Uniform(lo, lo + hi).cdf(lo + 0.25 * hi)),
         [randn(4), conc_b]),
    Case("bernoulli_probs", lambda t, p, x: (dist(t).Bernoulli(probs=p).log_prob(x),
                                             dist(t).Bernoulli(probs=p).entropy(),
                                             dist(t).Bernoulli(probs=p).variance),
         [probs, (unit_x > 0.5).astype(np.float32)], rtol=1e-5),
    Case("bernoulli_logits", lambda t, lg, x: (dist(t).Bernoulli(logits=lg).log_prob(x),
                                               dist(t).Bernoulli(logits=lg).probs,
                                               dist(t).Bernoulli(logits=lg).mean),
         [randn(3, 4) * 4, (unit_x > 0.5).astype(np.float32)], rtol=1e-5),
    Case("categorical_probs", lambda t, w, v: (dist(t).Categorical(probs=w).log_prob(v),
                                               dist(t).Categorical(probs=w).entropy(),
                                               dist(t).Categorical(probs=w).probs),
         [weights, np.array([[0, 4], [3, 3], [1, 2]], np.int64)], rtol=1e-5),
    Case("categorical_logits", lambda t, lg: (dist(t).Categorical(logits=lg).logits,
                                              dist(t).Categorical(logits=lg).entropy(),
                                              dist(t).Categorical(logits=lg).mode), [randn(2, 5)],
         rtol=1e-5),
    # MultivariateNormal from each of its three parametrisations, batches broadcast against x
    Case("mvn_covariance", lambda t, m, c, x: (dist(t).MultivariateNormal(m, c).log_prob(x),
                                               dist(t).MultivariateNormal(m, c).entropy()),
         [randn(3, dtype=np.float64), spd3, randn(5, 3, dtype=np.float64)], rtol=1e-9, atol=1e-10),
    Case("mvn_precision", lambda t, m, p, x: (dist(t).MultivariateNormal(m, precision_matrix=p).log_prob(x),
                                              dist(t).MultivariateNormal(m, precision_matrix=p).scale_tril),
         [randn(3, dtype=np.float64), spd3, randn(5, 3, dtype=np.float64)], rtol=1e-9, atol=1e-10),
    Case("mvn_scale_tril_batch", lambda t, m, L, x: (
        dist(t).MultivariateNormal(m, scale_tril=L.tril()).log_prob(x),
        dist(t).MultivariateNormal(m, scale_tril=L.tril()).entropy(),
        dist(t).MultivariateNormal(m, scale_tril=L.tril()).variance,
        dist(t).MultivariateNormal(m, scale_tril=L.tril()).covariance_matrix,
        dist(t).MultivariateNormal(m, scale_tril=L.tril()).precision_matrix),
         [randn(2, 3, dtype=np.float64), np.linalg.cholesky(np.stack([spd3, 2 * spd3 + np.eye(3)])),
          randn(4, 1, 3, dtype=np.float64)], rtol=1e-9, atol=1e-10),
    # kl_divergence for each registered pair (zeros and ones in probs give torch's inf and 0)
    Case("kl_normal", lambda t, m1, s1, m2, s2: dist(t).kl_divergence(dist(t).Normal(m1, s1),
                                                                       dist(t).Normal(m2, s2)),
         [randn(3, 4), conc_a, randn(4), conc_b]),
    Case("kl_bernoulli_logits", lambda t, a, b: dist(t).kl_divergence(
        dist(t).Bernoulli(logits=a * 8), dist(t).Bernoulli(logits=b * 8)), [randn(3, 4), randn(3, 4, seed=5)],
         rtol=1e-5, atol=1e-5),
    Case("kl_bernoulli_edges", lambda t, a, b: dist(t).kl_divergence(
        dist(t).Bernoulli(probs=a), dist(t).Bernoulli(probs=b)),
         [np.array([0.0, 1.0, 0.3, 0.3, 0.5], np.float32), np.array([0.2, 0.7, 0.0, 1.0, 0.5], np.float32)],
         grad=False),
    Case("kl_categorical", lambda t, a, b: dist(t).kl_divergence(
        dist(t).Categorical(probs=a), dist(t).Categorical(probs=b)),
         [np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]], np.float32),
          np.array([[0.1, 0.0, 0.9], [0.3, 0.3, 0.4]], np.float32)], grad=False),
    Case("kl_categorical_logits", lambda t, a, b: dist(t).kl_divergence(
        dist(t).Categorical(logits=a), dist(t).Categorical(logits=b)), [randn(2, 5), randn(5)], rtol=1e-5),
    Case("kl_beta", lambda t, a, b: dist(t).kl_divergence(dist(t).Beta(a, b), dist(t).Beta(b, a)),
         [conc_a, conc_b], rtol=1e-5, atol=1e-5),
    Case("kl_uniform", lambda t, lo, hi: dist(t).kl_divergence(
        dist(t).Uniform(lo, hi), dist(t).Uniform(lo - 0.5, hi * 2 - lo)),
         [np.array([0.0, 1.0, -1.0], np.float32), np.array([1.0, 3.0, 2.0], np.float32)]),
    Case("kl_uniform_outside", lambda t, lo, hi: dist(t).kl_divergence(
        dist(t).Uniform(lo - 1, hi), dist(t).Uniform(lo, hi)),
         [np.array([0.0, 1.0], np.float32), np.array([1.0, 3.0], np.float32)], grad=False),
    Case("kl_mvn", lambda t, m, c, L: dist(t).kl_divergence(
        dist(t).MultivariateNormal(m, c), dist(t).MultivariateNormal(m * 0, scale_tril=L.tril())),
         [randn(2, 3, dtype=np.float64), spd3, np.linalg.cholesky(2 * spd3 + np.eye(3))],
         rtol=1e-9, atol=1e-10),
    Case("kl_independent", lambda t, m1, s1, m2, s2: dist(t).kl_divergence(
        dist(t).Independent(dist(t).Normal(m1, s1), 1), dist(t).Independent(dist(t).Normal(m2, s2), 1)),
         [randn(3, 4), conc_a, randn(4), conc_b]),
    Case("independent", lambda t, m, s, x: (dist(t).Independent(dist(t).Normal(m, s), 2).log_prob(x),
                                            dist(t).Independent(dist(t).Normal(m, s), 1).entropy(),
                                            dist(t).Independent(dist(t).Normal(m, s), 1).mean,
                                            dist(t).Independent(dist(t).Normal(m, s), 1).variance),
         [randn(3, 4), conc_a, randn(2, 3, 4)]),
    Case("mvn_standard_2d", lambda t, x: dist(t).MultivariateNormal(t.zeros(2), t.eye(2)).log_prob(x),
         [randn(6, 2)], rtol=1e-6),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch(case):
    check(case)


SHAPES = [
    ("beta_scalar", lambda t: t.Beta(2.0, 3.0), (5, 2)),
    ("beta_batch", lambda t: t.Beta(mytorch_or_torch(t).ones(3, 1), mytorch_or_torch(t).ones(4)), (2,)),
    ("normal", lambda t: t.Normal(mytorch_or_torch(t).zeros(3), 1.0), (4,)),
    ("uniform", lambda t: t.Uniform(0.0, mytorch_or_torch(t).ones(2)), ()),
    ("bernoulli", lambda t: t.Bernoulli(probs=mytorch_or_torch(t).full((2, 3), 0.5)), (4,)),
    ("categorical", lambda t: t.Categorical(probs=mytorch_or_torch(t).ones(2, 5)), (3, 4)),
    ("independent", lambda t: t.Independent(t.Normal(mytorch_or_torch(t).zeros(2, 3), 1.0), 1), (4,)),
    ("mvn", lambda t: t.MultivariateNormal(mytorch_or_torch(t).zeros(2, 3),
                                           mytorch_or_torch(t).eye(3)), (4,)),
]


def mytorch_or_torch(d):
    return mytorch if d is MD else torch


@pytest.mark.parametrize("make,sample_shape", [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_shapes_like_torch(make, sample_shape):
    m, t = make(MD), make(TD)
    assert tuple(m.batch_shape) == tuple(t.batch_shape)
    assert tuple(m.event_shape) == tuple(t.event_shape)
    ms, ts = m.sample(sample_shape), t.sample(sample_shape)
    assert tuple(ms.shape) == tuple(ts.shape) and str(ms.dtype) == str(ts.dtype)
    assert not ms.requires_grad


def test_beta_sample_statistics():
    mytorch.manual_seed(0)
    a, b = 2.0, 5.0
    s = MD.Beta(mytorch.full((2,), a), mytorch.full((2,), b)).sample((50_000,)).double().numpy()
    assert s.min() > 0 and s.max() < 1
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(s.mean() - mean) < 0.003
    assert abs(s.var() - var) < 0.001
    small = MD.Beta(0.01, 0.01).sample((10_000,)).numpy()  # mass piles up at 0 and 1
    assert np.isfinite(small).all() and (small > 0).all() and (small < 1).all()


def test_beta_sampling_is_seeded():
    mytorch.manual_seed(3)
    a = MD.Beta(2.0, 2.0).sample((5,))
    mytorch.manual_seed(3)
    assert MD.Beta(2.0, 2.0).sample((5,)).tolist() == a.tolist()


def test_normal_rsample_is_differentiable():
    mytorch.manual_seed(0)
    loc = mytorch.zeros(3, requires_grad=True)
    scale = mytorch.ones(3, requires_grad=True)
    x = MD.Normal(loc, scale).rsample((1000,))
    assert tuple(x.shape) == (1000, 3)
    x.sum().backward()
    assert loc.grad.tolist() == [1000.0] * 3
    np.testing.assert_allclose(scale.grad.numpy(), x.detach().sum(0).numpy(), rtol=1e-4, atol=1e-3)


def test_other_sample_statistics():
    mytorch.manual_seed(1)
    n = MD.Normal(mytorch.tensor([1.0, -2.0]), mytorch.tensor([0.5, 2.0])).sample((50_000,)).numpy()
    np.testing.assert_allclose(n.mean(0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(n.std(0), [0.5, 2.0], rtol=0.02)
    u = MD.Uniform(2.0, 4.0).sample((50_000,)).numpy()
    assert u.min() >= 2 and u.max() < 4 and abs(u.mean() - 3) < 0.02
    b = MD.Bernoulli(probs=mytorch.tensor([0.2, 0.9])).sample((50_000,)).numpy()
    np.testing.assert_allclose(b.mean(0), [0.2, 0.9], atol=0.01)
    c = MD.Categorical(probs=mytorch.tensor([0.1, 0.6, 0.3])).sample((50_000,)).numpy()
    np.testing.assert_allclose(np.bincount(c, minlength=3) / 50_000, [0.1, 0.6, 0.3], atol=0.01)


ERRORS = [
    ("beta_negative_concentration", lambda t: t.distributions.Beta(-1.0, 2.0)),
    ("beta_zero_tensor", lambda t: t.distributions.Beta(t.tensor([1.0, 0.0]), t.ones(2))),
    ("beta_sample_outside_support", lambda t: t.distributions.Beta(2.0, 2.0).log_prob(t.tensor([1.5]))),
    ("normal_negative_scale", lambda t: t.distributions.Normal(0.0, -1.0)),
    ("uniform_low_above_high", lambda t: t.distributions.Uniform(2.0, 1.0)),
    ("bernoulli_both", lambda t: t.distributions.Bernoulli(probs=t.tensor(0.5), logits=t.tensor(0.0))),
    ("bernoulli_bad_value", lambda t: t.distributions.Bernoulli(probs=t.tensor(0.5)).log_prob(t.tensor(0.5))),
    ("categorical_neither", lambda t: t.distributions.Categorical()),
    ("categorical_bad_value", lambda t: t.distributions.Categorical(probs=t.ones(3)).log_prob(t.tensor(3))),
    ("mvn_not_positive_definite", lambda t: t.distributions.MultivariateNormal(t.zeros(2), t.ones(2, 2))),
    ("mvn_not_symmetric",
     lambda t: t.distributions.MultivariateNormal(t.zeros(2), t.tensor([[1.0, 2.0], [0.0, 1.0]]))),
    ("mvn_no_matrix", lambda t: t.distributions.MultivariateNormal(t.zeros(2))),
    ("mvn_scalar_loc", lambda t: t.distributions.MultivariateNormal(t.tensor(0.0), t.eye(2))),
    ("mvn_vector_cov", lambda t: t.distributions.MultivariateNormal(t.zeros(2), t.ones(2))),
    ("mvn_bad_scale_tril", lambda t: t.distributions.MultivariateNormal(t.zeros(2), scale_tril=t.ones(2, 2))),
    ("kl_unregistered", lambda t: t.distributions.kl_divergence(t.distributions.Bernoulli(0.5),
                                                                 t.distributions.Categorical(t.ones(2)))),
    ("kl_mvn_event_shapes", lambda t: t.distributions.kl_divergence(
        t.distributions.MultivariateNormal(t.zeros(2), t.eye(2)),
        t.distributions.MultivariateNormal(t.zeros(3), t.eye(3)))),
    ("independent_too_many_dims", lambda t: t.distributions.Independent(t.distributions.Normal(t.zeros(2), 1.0), 2)),
    ("independent_nan_value", lambda t: t.distributions.Independent(
        t.distributions.Normal(t.zeros(2), 1.0), 1).log_prob(t.tensor([float("nan"), 0.0]))),
    ("mvn_nan_value",
     lambda t: t.distributions.MultivariateNormal(t.zeros(2), t.eye(2)).log_prob(t.tensor([float("nan"), 0.0]))),
]


@pytest.mark.parametrize("fn", [e[1] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_like_torch(fn):
    check_raises(fn)


def test_validation_message_and_opt_out():
    with pytest.raises(ValueError) as err:
        MD.Beta(-1.0, 2.0)
    with pytest.raises(ValueError) as terr:
        TD.Beta(-1.0, 2.0)
    # torch's Beta delegates to a Dirichlet and reports that; mytorch names Beta's own parameter
    for msg in (str(err.value), str(terr.value)):
        assert "GreaterThan(lower_bound=0.0)" in msg and "but found invalid values" in msg
    assert str(err.value).startswith("Expected parameter concentration1 (Tensor of shape ()) of "
                                     "distribution Beta()")
    # validate_args=False skips the checks (log_prob outside the support is then -inf / nan)
    assert MD.Beta(2.0, 2.0, validate_args=False).log_prob(mytorch.tensor(1.0)).item() == float("-inf")
    assert repr(MD.Beta(2.0, 3.0)) == repr(TD.Beta(2.0, 3.0))
    assert repr(MD.Normal(0.0, 1.0)) == repr(TD.Normal(0.0, 1.0))


def test_mvn_messages_and_lazy_parameters():
    """Validation names torch's constraints; parameters not given are computed on first use and
    skipped by validation (``scale_tril`` of a covariance-made distribution)."""
    msgs = []
    for lib in (mytorch, torch):
        with pytest.raises(ValueError) as err:
            lib.distributions.MultivariateNormal(lib.zeros(2), lib.ones(2, 2))
        msgs.append(str(err.value))
        d = lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2))
        assert "scale_tril" not in d.__dict__ and repr(d) == (
            "MultivariateNormal(loc: torch.Size([2]), covariance_matrix: torch.Size([2, 2]))")
        assert d.scale_tril.tolist() == [[1.0, 0.0], [0.0, 1.0]] and "scale_tril" in d.__dict__
    assert msgs[0] == msgs[1] and "PositiveDefinite()" in msgs[0]
    assert [repr(c) for c in (MD.constraints.real_vector, MD.constraints.lower_cholesky)] == [
        "IndependentConstraint(Real(), 1)", "LowerCholesky()"]


def test_mvn_rsample_is_differentiable_and_has_the_covariance():
    mytorch.manual_seed(0)
    loc = mytorch.tensor([1.0, -1.0], requires_grad=True)
    cov = mytorch.tensor([[2.0, 0.6], [0.6, 1.0]], requires_grad=True)
    x = MD.MultivariateNormal(loc, cov).rsample((20_000,))
    x.sum().backward()
    assert loc.grad.tolist() == [20_000.0, 20_000.0] and cov.grad is not None
    np.testing.assert_allclose(np.cov(x.detach().numpy().T), [[2.0, 0.6], [0.6, 1.0]], atol=0.06)


def test_independent_repr_and_kl_registry():
    """``Independent``'s repr and support are torch's; ``register_kl`` adds a formula, and a
    subclass uses its base classes' one."""
    for lib in (mytorch, torch):
        D = lib.distributions
        ind = D.Independent(D.Normal(lib.zeros(2, 3), lib.ones(2, 3)), 1)
        assert repr(ind) == ("Independent(Normal(loc: torch.Size([2, 3]), scale: torch.Size([2, 3])), 1)")
        assert repr(ind.support) == "IndependentConstraint(Real(), 1)" and ind.has_rsample

        class Shifted(D.Normal):
            pass

        assert D.kl_divergence(Shifted(lib.zeros(2), 1.0), D.Normal(1.0, 1.0)).tolist() == [0.5, 0.5]
    calls = []

    @MD.register_kl(MD.Bernoulli, MD.Normal)
    def _kl_bernoulli_normal(p, q):
        calls.append((p, q))
        return mytorch.zeros(())

    try:
        MD.kl_divergence(MD.Bernoulli(0.5), MD.Normal(0.0, 1.0))
        assert len(calls) == 1
    finally:
        del MD.kl._KL_REGISTRY[MD.Bernoulli, MD.Normal]
