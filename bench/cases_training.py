"""Chapter 10 benchmark: one training epoch of each of the chapter's models, mytorch vs torch (CPU).

The MLP and the CNN train on scikit-learn's digits (1257 images, batches of 32, Adam); the
character-level GRU language model on the story of ``bookkit/data`` (59 pieces of 48 characters,
batches of 8, Adam with gradient clipping). Both libraries start from the same weights and see the
same batches; torch runs on one thread, as the chapter does. Best of ``repeat`` epochs.

Target (issue 15): mytorch's epoch at most 1.5× torch's.
"""
from __future__ import annotations

import time
from importlib.resources import files
from types import ModuleType
from typing import Any, Callable

import numpy as np

import mytorch

try:  # torch is optional: the table shows "-" without it
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

TARGET = 1.5


def _digits(flat: bool) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:1257]
    return (x.reshape(-1, 64) if flat else x[:, None]), d.target[:1257].astype(np.int64)


def _mlp(lib: ModuleType) -> Any:
    return lib.nn.Sequential(lib.nn.Linear(64, 64), lib.nn.ReLU(), lib.nn.Linear(64, 10))


def _cnn(lib: ModuleType) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def _lm(vocab: int) -> Callable[[ModuleType], Any]:
    def build(lib: ModuleType) -> Any:
        nn = lib.nn

        class CharLM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed, self.rnn = nn.Embedding(vocab, 32), nn.GRU(32, 96, batch_first=True)
                self.head = nn.Linear(96, vocab)

            def forward(self, x: Any) -> Any:
                return self.head(self.rnn(self.embed(x))[0]).reshape(-1, vocab)

        return CharLM()
    return build


def _text() -> tuple[np.ndarray, np.ndarray, int]:
    text = (files("bookkit") / "data" / "lighthouse.txt").read_text(encoding="utf-8")
    alphabet = sorted(set(text))
    codes = np.array([alphabet.index(c) for c in text], dtype=np.int64)
    n = (len(codes) - 1) // 48
    return codes[:n * 48].reshape(n, 48), codes[1:n * 48 + 1].reshape(-1), len(alphabet)


def _epoch(lib: ModuleType, model: Any, x: np.ndarray, y: np.ndarray, batch: int,
           clip: bool, per_row: int = 1) -> Callable[[], None]:
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    order = np.random.default_rng(0).permutation(len(x))

    def run() -> None:
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            target = y.reshape(len(x), -1)[idx].reshape(-1) if per_row > 1 else y[idx]
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.from_numpy(x[idx])), lib.from_numpy(target))
            loss.backward()
            if clip:
                lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return run


def report(repeat: int = 3) -> tuple[str, list[str]]:
    """The table of epoch times and the list of missed targets."""
    if torch is not None:
        torch.set_num_threads(1)
    text_x, text_y, vocab = _text()
    setups = {"MLP (digits)": (_mlp, *_digits(True), 32, False, 1),
              "CNN (digits)": (_cnn, *_digits(False), 32, False, 1),
              "char GRU LM": (_lm(vocab), text_x, text_y, 8, True, 48)}
    lines = [f"One training epoch of chapter 10's models (seconds, best of {max(1, repeat)}; torch on 1 thread)",
             f"{'model':>14}  {'mytorch':>8}  {'torch':>8}  {'my/torch':>8}  {'target':>7}  ok?"]
    missed = []
    for name, (build, x, y, batch, clip, per_row) in setups.items():
        libs = {"mytorch": mytorch, **({"torch": torch} if torch is not None else {})}
        runs = {k: _epoch(lib, build(lib), x, y, batch, clip, per_row) for k, lib in libs.items()}
        best = dict.fromkeys(runs, float("inf"))
        for fn in runs.values():
            fn()                                   # warm up
        for _ in range(max(1, repeat)):
            for k, fn in runs.items():
                t = time.perf_counter()
                fn()
                best[k] = min(best[k], time.perf_counter() - t)
        if "torch" in best:
            ratio = best["mytorch"] / best["torch"]
            ok = ratio <= TARGET
            if not ok:
                missed.append(f"training epoch {name}")
            lines.append(f"{name:>14}  {best['mytorch']:8.3f}  {best['torch']:8.3f}  {ratio:7.2f}x  "
                         f"{'<=' + str(TARGET) + 'x':>7}  {'yes' if ok else 'NO'}")
        else:
            lines.append(f"{name:>14}  {best['mytorch']:8.3f}  {'-':>8}  {'-':>8}  {'-':>7}  -")
    return "\n".join(lines), missed
