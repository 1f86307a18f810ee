"""nn functionals on the simulated CUDA device: tensors on two devices are refused with torch's
RuntimeError (not a NumPy TypeError from deep inside a fused kernel), and results stay on the device.

torch's oracle here is a CPU build, so the expected messages are torch's wording, written out:
most kernels say "Expected all tensors to be on the same device, …"; convolutions compare the
tensors' types ("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) …").
"""
from __future__ import annotations

import re

import pytest
from test_device import assert_on_device

import mytorch
import mytorch.nn.functional as F

SAME_DEVICE = re.escape("Expected all tensors to be on the same device, but found at least two "
                        "devices, ") + r"(cuda:0 and cpu|cpu and cuda:0)!"


def _long(*shape: int, high: int = 3) -> mytorch.Tensor:
    return (mytorch.rand(*shape) * high).long()


# Each case: fn(a, b) where ``a`` makes the main input and ``b`` the other tensor(s).
CASES = {
    "batch_norm": lambda a, b: F.batch_norm(a(4, 3), None, None, b(3), b(3), training=True),
    "batch_norm_running": lambda a, b: F.batch_norm(a(4, 3), b(3), b(3).abs(), training=True),
    "batch_norm_eval": lambda a, b: F.batch_norm(a(4, 3), b(3), b(3).abs(), training=False),
    "layer_norm": lambda a, b: F.layer_norm(a(4, 3), (3,), b(3), b(3)),
    "instance_norm": lambda a, b: F.instance_norm(a(2, 3, 4), weight=b(3), bias=b(3)),
    "instance_norm_running": lambda a, b: F.instance_norm(a(2, 3, 4), b(3), b(3).abs()),
    "group_norm": lambda a, b: F.group_norm(a(2, 4, 3), 2, b(4), b(4)),
    "cross_entropy": lambda a, b: F.cross_entropy(a(4, 3), _long(4).to(b(1).device)),
    "cross_entropy_weight": lambda a, b: F.cross_entropy(
        a(4, 3), _long(4).to(a(1).device), weight=b(3).abs()),
    "cross_entropy_smoothing": lambda a, b: F.cross_entropy(
        a(4, 3), _long(4).to(b(1).device), label_smoothing=0.1),
    "cross_entropy_probs": lambda a, b: F.cross_entropy(a(4, 3), F.softmax(b(4, 3), 1)),
    "nll_loss": lambda a, b: F.nll_loss(a(4, 3), _long(4).to(b(1).device)),
    "nll_loss_weight": lambda a, b: F.nll_loss(a(4, 3), _long(4).to(a(1).device), weight=b(3)),
    "binary_cross_entropy": lambda a, b: F.binary_cross_entropy(a(4).sigmoid(), b(4).sigmoid()),
    "binary_cross_entropy_weight": lambda a, b: F.binary_cross_entropy(
        a(4).sigmoid(), a(4).sigmoid(), weight=b(4)),
    "bce_with_logits": lambda a, b: F.binary_cross_entropy_with_logits(a(4), b(4).sigmoid()),
    "bce_with_logits_pos_weight": lambda a, b: F.binary_cross_entropy_with_logits(
        a(4, 2), a(4, 2).sigmoid(), pos_weight=b(2)),
    "embedding": lambda a, b: F.embedding(_long(2).to(a(1).device), b(4, 2)),
    "max_unpool1d": lambda a, b: F.max_unpool1d(a(1, 1, 2), _long(1, 1, 2, high=1).to(b(1).device), 2),
    "mse_loss": lambda a, b: F.mse_loss(a(4), b(4)),
    "prelu": lambda a, b: F.prelu(a(2, 3), b(3)),
}


def _cuda(*shape: int) -> mytorch.Tensor:
    return mytorch.randn(*shape).cuda()


def _cpu(*shape: int) -> mytorch.Tensor:
    return mytorch.randn(*shape)


@pytest.mark.parametrize("order", ["cuda_first", "cpu_first"])
@pytest.mark.parametrize("fn", CASES.values(), ids=CASES.keys())
def test_mixing_devices_is_torchs_runtime_error(sim, fn, order):
    a, b = (_cuda, _cpu) if order == "cuda_first" else (_cpu, _cuda)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        fn(a, b)


@pytest.mark.parametrize("fn", CASES.values(), ids=CASES.keys())
def test_all_on_device_stays_on_device(sim, fn):
    assert_on_device(fn(_cuda, _cuda))


CONV = {
    "conv1d": lambda a, b: F.conv1d(a(1, 1, 5), b(2, 1, 3)),
    "conv2d": lambda a, b: F.conv2d(a(1, 1, 5, 5), b(2, 1, 3, 3)),
    "conv3d": lambda a, b: F.conv3d(a(1, 1, 4, 4, 4), b(2, 1, 3, 3, 3)),
    "conv_transpose1d": lambda a, b: F.conv_transpose1d(a(1, 1, 5), b(1, 2, 3)),
    "conv_transpose2d": lambda a, b: F.conv_transpose2d(a(1, 1, 5, 5), b(1, 2, 3, 3)),
    "conv_transpose3d": lambda a, b: F.conv_transpose3d(a(1, 1, 3, 3, 3), b(1, 2, 2, 2, 2)),
}


@pytest.mark.parametrize("fn", CONV.values(), ids=CONV.keys())
def test_convolution_device_mismatch(sim, fn):
    with pytest.raises(RuntimeError, match=re.escape(
            "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
            "the same")):
        fn(_cuda, _cpu)
    with pytest.raises(RuntimeError, match=re.escape(
            "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be "
            "the same or input should be a MKLDNN tensor and weight is a dense tensor")):
        fn(_cpu, _cuda)
    x = fn(_cuda, _cuda)
    assert_on_device(x)


def test_convolution_bias_on_other_device(sim):
    with pytest.raises(RuntimeError, match=re.escape(
            "Input type (torch.cuda.FloatTensor) and bias type (torch.FloatTensor) should be the "
            "same")):
        F.conv2d(_cuda(1, 1, 5, 5), _cuda(2, 1, 3, 3), _cpu(2))
    with pytest.raises(RuntimeError, match=SAME_DEVICE.replace("cuda:0", "cuda:[01]")
                       .replace("cpu", "cuda:[01]")):
        F.conv2d(_cuda(1, 1, 5, 5), mytorch.randn(2, 1, 3, 3, device="cuda:1"))


def test_modules_from_the_audit(sim):
    """``Conv2d(...).cuda()`` on a CPU batch and ``Embedding(...).cuda()`` on CPU indices."""
    with pytest.raises(RuntimeError, match="should be the same"):
        mytorch.nn.Conv2d(1, 2, 3).cuda()(mytorch.randn(1, 1, 5, 5))
    with pytest.raises(RuntimeError) as info:
        mytorch.nn.Embedding(4, 2).cuda()(mytorch.tensor([1]))
    assert str(info.value) == ("Expected all tensors to be on the same device, but found at least "
                               "two devices, cuda:0 and cpu!")


def test_linear_names_devices_in_torchs_order(sim):
    """With a bias torch runs ``addmm(bias, x, Wᵀ)``: the bias's device is named first."""
    with pytest.raises(RuntimeError) as info:
        mytorch.nn.Linear(3, 2).cuda()(mytorch.randn(4, 3))
    assert str(info.value).endswith("devices, cuda:0 and cpu!")
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        mytorch.nn.Linear(3, 2, bias=False).cuda()(mytorch.randn(4, 3))


def test_conv_backward_on_device(sim):
    conv = mytorch.nn.Conv2d(2, 3, 3, padding=1).cuda()
    x = mytorch.randn(2, 2, 5, 5, device="cuda", requires_grad=True)
    conv(x).square().sum().backward()
    for t in (x.grad, conv.weight.grad, conv.bias.grad):
        assert_on_device(t)
