"""Programs people learn from, in the parts issue 24 found missing: nanoGPT's training-script
setup (its dtype table naming bfloat16, nullcontext on the CPU, ``torch.cuda.amp.GradScaler``),
DCGAN's device flags, forward-forward's ``x[range(n), y] = v``. Each takes the library as its
``torch`` argument; both libraries must print the same."""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
import torch as real_torch

import mytorch

# programs here set real torch's global matmul flags (nanoGPT turns TF32 on): conftest puts them back
pytestmark = pytest.mark.usefixtures("torch_flags_put_back")



def nanogpt_setup(torch):
    """The head of nanoGPT's train.py, then a few steps of a tiny causal model with its scaler."""
    out = io.StringIO()
    device = "cpu"
    dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
    compile = False  # noqa: A001
    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    ctx = contextlib.nullcontext() if device_type == "cpu" else torch.amp.autocast(
        device_type=device_type, dtype=ptdtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    print(ptdtype, scaler.is_enabled(), torch.backends.mps.is_available(), file=out)

    emb = torch.nn.Embedding(11, 8)
    head = torch.nn.Linear(8, 11, bias=False)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(rng.standard_normal((11, 8)).astype(np.float32)))
        head.weight.copy_(torch.from_numpy(rng.standard_normal((11, 8)).astype(np.float32) / 3))
    params = list(emb.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-2, betas=(0.9, 0.95))
    if compile:
        head = torch.compile(head)
    x = torch.from_numpy(rng.integers(0, 11, (4, 6)))
    y = torch.roll(x, -1, 1)
    mask = torch.tril(torch.ones(6, 6)).view(1, 6, 6)
    for it in range(3):
        with ctx:
            h = emb(x)
            att = (h @ h.transpose(-2, -1)) / 8 ** 0.5
            att = att.masked_fill(mask == 0, float("-inf")).softmax(-1)
            logits = head(att @ h)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 11), y.view(-1))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        print(f"iter {it}: loss {loss.item():.4f}", file=out)
    return out.getvalue()


def test_nanogpt_setup_runs_and_prints_as_torch():
    assert nanogpt_setup(mytorch) == nanogpt_setup(real_torch)


def dcgan_device_choice(torch):
    """DCGAN's ``main.py`` picks its accelerator from the tensor and module flags."""
    x = torch.zeros(2, 3)
    use_accel = x.is_cuda or x.is_xpu or x.is_mps
    acc = torch.accelerator.is_available() if hasattr(torch, "accelerator") else False
    return use_accel, acc, x.is_meta, torch.xpu.is_available(), torch.mps.is_available()


def test_dcgan_device_flags_as_torch():
    assert dcgan_device_choice(mytorch) == dcgan_device_choice(real_torch)


def forward_forward_overlay(torch):
    """forward-forward's ``overlay_y_on_x``: one-hot labels written over the first pixels."""
    x = torch.arange(40.0).view(4, 10)
    y = torch.tensor([3, 1, 4, 1])
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_.tolist()


def test_forward_forward_overlay_as_torch():
    assert forward_forward_overlay(mytorch) == forward_forward_overlay(real_torch)
