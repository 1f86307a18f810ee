"""A small GPT's training step (issue 24), mytorch vs torch (CPU, one thread).

The model is the one nanoGPT and minGPT teach: token and position embeddings, pre-LayerNorm
blocks of causal self-attention (``F.scaled_dot_product_attention(is_causal=True)``) and a GELU
MLP, a tied-free linear head, cross-entropy. One step is ``zero_grad``, forward, backward,
``clip_grad_norm_(…, 1.0)`` and AdamW over two parameter groups (weight decay on matrices only,
as nanoGPT's ``configure_optimizers``). Both libraries start from the same weights and see the
same batches. Best of ``repeat`` runs of ``STEPS`` steps, in CPU time (one thread each).

Target (issue 24): mytorch's step at most 1.2× torch's.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

import mytorch

try:  # torch is optional: the table shows "-" without it
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

TARGET = 1.2
STEPS = 5
VOCAB, BLOCK, EMBD, HEADS, LAYERS, BATCH = 65, 64, 64, 4, 2, 8


def gpt(lib: ModuleType) -> Any:
    """A nanoGPT-style model built from ``lib`` (mytorch or torch)."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(EMBD), nn.LayerNorm(EMBD)
            self.c_attn, self.c_proj = nn.Linear(EMBD, 3 * EMBD), nn.Linear(EMBD, EMBD)
            self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD))

        def attn(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(EMBD, dim=2)
            q, k, v = (z.view(B, T, HEADS, C // HEADS).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, EMBD), nn.Embedding(BLOCK, EMBD)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f, self.lm_head = nn.LayerNorm(EMBD), nn.Linear(EMBD, VOCAB, bias=False)

        def forward(self, idx: Any, targets: Any) -> Any:
            pos = lib.arange(0, idx.size(1), dtype=lib.long)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def same_weights(model: Any, reference: Any) -> None:
    """Copy ``reference``'s weights (the other library's model) into ``model``."""
    state = {k: v.detach().cpu().numpy().copy() for k, v in reference.state_dict().items()}
    for k, v in model.state_dict().items():
        v.copy_(_like(v, state[k]))


def _like(v: Any, arr: np.ndarray) -> Any:
    mod = mytorch if isinstance(v, mytorch.Tensor) else torch
    return mod.from_numpy(arr)


def optimizer(lib: ModuleType, model: Any) -> Any:
    """nanoGPT's ``configure_optimizers``: decay the matrices, not the biases and norms."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95))


def batches(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    data = rng.integers(0, VOCAB, size=BATCH * BLOCK * n + 1)
    out = []
    for i in range(n):
        s = data[i * BATCH * BLOCK:(i + 1) * BATCH * BLOCK + 1]
        out.append((s[:-1].reshape(BATCH, BLOCK), s[1:].reshape(BATCH, BLOCK)))
    return out


def training(lib: ModuleType, model: Any) -> Callable[[], float]:
    """``STEPS`` training steps as one callable; returns the last loss."""
    opt = optimizer(lib, model)
    data = [(lib.from_numpy(x), lib.from_numpy(y)) for x, y in batches(STEPS)]

    def run() -> float:
        for x, y in data:
            opt.zero_grad(set_to_none=True)
            loss = model(x, y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return float(loss.item())
    return run


def report(repeat: int = 3) -> tuple[str, list[str]]:
    """The GPT-step row and the list of missed targets."""
    libs = {"mytorch": mytorch, **({"torch": torch} if torch is not None else {})}
    if torch is not None:
        torch.set_num_threads(1)
        torch.manual_seed(0)
    models = {k: gpt(lib) for k, lib in libs.items()}
    if torch is not None:
        same_weights(models["mytorch"], models["torch"])
    runs = {k: training(lib, models[k]) for k, lib in libs.items()}
    best = dict.fromkeys(runs, float("inf"))
    for fn in runs.values():
        fn()                                       # warm up
    for _ in range(max(2, repeat)):
        for k, fn in runs.items():
            t = time.process_time()  # CPU time: both run on one thread, and a busy machine's
            fn()                     # other processes do not count against either
            best[k] = min(best[k], (time.process_time() - t) / STEPS * 1e3)
    size = f"B={BATCH} T={BLOCK} C={EMBD} heads={HEADS} layers={LAYERS}"
    lines = [f"A small GPT's training step (CPU ms per step, best of {max(2, repeat)}; "
             "one thread each)",
             f"{'model':>10}  {'size':<40}  {'mytorch':>8}  {'torch':>8}  {'my/torch':>8}  "
             f"{'target':>7}  ok?"]
    missed = []
    if "torch" in best:
        ratio = best["mytorch"] / best["torch"]
        ok = ratio <= TARGET
        if not ok:
            missed.append("GPT training step")
        lines.append(f"{'GPT step':>10}  {size:<40}  {best['mytorch']:8.2f}  {best['torch']:8.2f}  "
                     f"{ratio:7.2f}x  {'<=' + str(TARGET) + 'x':>7}  {'yes' if ok else 'NO'}")
    else:
        lines.append(f"{'GPT step':>10}  {size:<40}  {best['mytorch']:8.2f}  {'-':>8}  {'-':>8}  {'-':>7}  -")
    return "\n".join(lines), missed
