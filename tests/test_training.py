"""mytorch.utils.training (mytorch only, chapter 10): the training step, the confusion matrix and
evaluate, early stopping and the learning-rate range test, each checked against torch or by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import mytorch
from bookkit.torch_bridge import copy_weights
from mytorch.utils import training


def problem(lib, seed=0, n=48):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)).astype(np.int64)
    ds = lib.utils.data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    return lib.utils.data.DataLoader(ds, batch_size=16)


def model(lib):
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def twins():
    mytorch.manual_seed(0)
    mine = model(mytorch)
    theirs = model(torch)
    copy_weights(mine, theirs)
    return mine, theirs


def test_train_step_and_epoch_match_torch_loop():
    mine, theirs = twins()
    opt_m = mytorch.optim.SGD(mine.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    for p in mine.parameters():                       # a stale gradient must not leak into the step
        p.grad = mytorch.ones_like(p)
    got = training.train_epoch(mine, problem(mytorch), mytorch.nn.CrossEntropyLoss(), opt_m)
    total = 0.0
    for x, y in problem(torch):
        opt_t.zero_grad()
        loss = torch.nn.functional.cross_entropy(theirs(x), y)
        loss.backward()
        opt_t.step()
        total += loss.item() * len(y)
    assert got == pytest.approx(total / 48, rel=1e-5)
    for a, b in zip(mine.parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    loss = training.train_step(mine, mytorch.nn.functional.cross_entropy, opt_m,
                               *next(iter(problem(mytorch))))
    assert loss.dim() == 0 and loss.grad_fn is None and not loss.requires_grad


def test_confusion_matrix_and_evaluate_match_numpy():
    rng = np.random.default_rng(3)
    true, pred = rng.integers(0, 6, 200), rng.integers(0, 6, 200)
    want = np.zeros((6, 6), np.int64)
    np.add.at(want, (true, pred), 1)
    got = training.confusion_matrix(mytorch.from_numpy(pred), mytorch.from_numpy(true), 6)
    assert got.dtype == mytorch.int64
    np.testing.assert_array_equal(got.numpy(), want)
    mine, theirs = twins()
    mine.train()
    acc, matrix = training.evaluate(mine, problem(mytorch, seed=4), 3)
    assert mine.training                               # evaluate puts the mode back
    with torch.no_grad():
        x, y = problem(torch, seed=4).dataset.tensors
        pred_t = theirs(x).argmax(1)
    assert acc == pytest.approx((pred_t == y).double().mean().item())
    assert int(matrix.sum()) == 48 and int(matrix.diagonal().sum()) == int((pred_t == y).sum())


@pytest.mark.parametrize("mode,metrics,stop_at,best", [
    ("min", [1.0, 0.8, 0.81, 0.795, 0.9, 0.7], 4, 0.8),      # 0.795 is within min_delta of 0.8
    ("max", [0.5, 0.6, 0.6, 0.65, 0.64, 0.63, 0.62], 6, 0.65),
])
def test_early_stopping(mode, metrics, stop_at, best):
    stopper = training.EarlyStopping(patience=3, mode=mode, min_delta=0.01)
    stopped = next(i for i, m in enumerate(metrics) if stopper.step(m))
    assert stopped == stop_at and stopper.best == best
    again = training.EarlyStopping()
    again.load_state_dict(stopper.state_dict())
    assert again.state_dict() == stopper.state_dict()
    with pytest.raises(ValueError, match="diverged"):
        stopper.step(float("nan"))
    with pytest.raises(ValueError, match="'min' or 'max'"):
        training.EarlyStopping(mode="lowest")


def test_suggest_lr_by_hand():
    lrs = [10.0 ** e for e in range(-5, 1)]
    assert training.suggest_lr(lrs, [3.0, 2.9, 1.0, 0.8, 0.7, 50.0], beta=0.0) == 1e-3
    # smoothed by hand: beta=0.5, bias-corrected
    losses = [2.0, 2.0, 1.0, 1.0, 0.0, 0.0]
    s, a = [], 0.0
    for i, l in enumerate(losses):
        a = 0.5 * a + 0.5 * l
        s.append(a / (1 - 0.5 ** (i + 1)))
    slopes = [(s[i] - s[i - 1]) / math.log(10) for i in range(1, 6)]
    assert training.suggest_lr(lrs, losses, beta=0.5) == lrs[1 + int(np.argmin(slopes))]


def test_lr_find_restores_model_and_optimizer():
    mine, _ = twins()
    opt = mytorch.optim.Adam(mine.parameters(), lr=1e-3)
    before = [p.detach().clone() for p in mine.parameters()]
    lrs, losses, lr = training.lr_find(mine, mytorch.nn.functional.cross_entropy, opt, problem(mytorch),
                                       1e-4, 10.0, 25)
    assert len(lrs) == len(losses) and 2 <= len(lrs) <= 25 and lr in lrs
    assert lrs[1] / lrs[0] == pytest.approx((10.0 / 1e-4) ** (1 / 24))
    assert all(mytorch.equal(a, b) for a, b in zip(before, mine.parameters()))
    assert opt.param_groups[0]["lr"] == 1e-3 and not opt.state
    with pytest.raises(ValueError, match="start_lr < end_lr"):
        training.lr_find(mine, mytorch.nn.functional.cross_entropy, opt, problem(mytorch), 1.0, 0.1)


def test_resuming_from_a_checkpoint_is_bit_exact():
    """Chapter 10's claim: model + optimizer + early-stopping state + epoch in a checkpoint give a
    resumed run equal, bit for bit, to one that never stopped."""
    import io

    def run(epochs_before_break):
        mytorch.manual_seed(5)
        net = model(mytorch)
        opt = mytorch.optim.Adam(net.parameters(), lr=0.01)
        stopper = training.EarlyStopping(patience=10)
        buf = None
        for epoch in range(4):
            if epoch == epochs_before_break:          # a new process: everything from the file
                ckpt = mytorch.load(io.BytesIO(buf.getvalue()))
                mytorch.manual_seed(123)
                net = model(mytorch)
                net.load_state_dict(ckpt["model"])
                opt = mytorch.optim.Adam(net.parameters(), lr=0.01)
                opt.load_state_dict(ckpt["optimizer"])
                stopper = training.EarlyStopping()
                stopper.load_state_dict(ckpt["stopper"])
            loss = training.train_epoch(net, problem(mytorch, seed=epoch), mytorch.nn.CrossEntropyLoss(), opt)
            stopper.step(loss)
            buf = io.BytesIO()
            mytorch.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                          "stopper": stopper.state_dict()}, buf)
        return [p.detach().clone() for p in net.parameters()], stopper.state_dict()

    straight, resumed = run(None), run(2)
    assert all(mytorch.equal(a, b) for a, b in zip(straight[0], resumed[0]))
    assert straight[1] == resumed[1]


def test_grad_norm_recorder_matches_hooks_written_by_hand_in_torch():
    mine, theirs = twins()
    theirs[0].bias.requires_grad_(False)               # frozen: skipped, it has no gradient
    mine[0].bias.requires_grad_(False)
    want = {name: [] for name, p in theirs.named_parameters() if p.requires_grad}
    handles = [p.register_hook(lambda g, name=name: want[name].append(torch.linalg.vector_norm(g).item()))
               for name, p in theirs.named_parameters() if p.requires_grad]
    batches_m, batches_t = list(problem(mytorch)), list(problem(torch))
    with training.GradNormRecorder(mine) as recorder:
        for (xm, ym), (xt, yt) in zip(batches_m, batches_t):   # no zero_grad: .grad accumulates,
            mytorch.nn.functional.cross_entropy(mine(xm), ym).backward()  # each pass is seen alone
            torch.nn.functional.cross_entropy(theirs(xt), yt).backward()
        assert "recording" in repr(recorder)
    for h in handles:
        h.remove()
    assert list(recorder.norms) == list(want) == ["0.weight", "2.weight", "2.bias"]
    for name in want:
        assert len(recorder.norms[name]) == len(batches_m) == 3
        assert all(type(v) is float for v in recorder.norms[name])
        np.testing.assert_allclose(recorder.norms[name], want[name], rtol=1e-5)
    mytorch.nn.functional.cross_entropy(mine(batches_m[0][0]), batches_m[0][1]).backward()
    assert all(len(v) == 3 for v in recorder.norms.values())          # removed at the end of `with`
    recorder.remove()                                                  # a second remove does nothing
    assert repr(recorder) == "GradNormRecorder(3 parameters, 3 backward passes, removed)"


def test_grad_norm_recorder_filter_and_errors():
    mine, _ = twins()
    recorder = training.GradNormRecorder(mine, filter=lambda name, p: p.dim() > 1)
    assert list(recorder.norms) == ["0.weight", "2.weight"]
    mine(mytorch.ones(2, 5)).sum().backward()
    recorder.remove()
    assert [len(v) for v in recorder.norms.values()] == [1, 1]
    with pytest.raises(ValueError, match="no parameter to watch"):
        training.GradNormRecorder(mine, filter=lambda name, p: False)
    with pytest.raises(TypeError, match="must be a module"):
        training.GradNormRecorder(list(mine.parameters()))
    with pytest.raises(TypeError, match="filter must be a function"):
        training.GradNormRecorder(mine, filter="weight")


def test_attach_grad_norm_hooks_piece_directly():
    w = mytorch.tensor([3.0, 4.0], requires_grad=True)
    norms = {"w": []}
    handles = training.attach_grad_norm_hooks([("w", w)], norms)
    (w * 2).sum().backward()                           # gradient [2, 2]: norm sqrt(8)
    (w * w).sum().backward()                           # gradient [6, 8]: norm 10, not that of .grad
    assert norms == {"w": [pytest.approx(math.sqrt(8)), pytest.approx(10.0)]}
    assert w.grad.tolist() == [8.0, 10.0]              # the hook leaves the gradient alone
    assert len(handles) == 1
    handles[0].remove()
    w.sum().backward()
    assert len(norms["w"]) == 2
