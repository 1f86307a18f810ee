"""Whole programs (issue 24): each program of tests/test_real_programs.py, mytorch vs torch.

The programs are the ones the tests run unchanged under both libraries (nanoGPT, makemore, a
DCGAN, a GAT, the word-level LSTM language model, forward-forward, the polynomial tutorials,
time-sequence prediction, and the book's earlier kinds), at the tests' sizes: what a learner's
short run costs, Python overhead included. Each program runs once to warm up, then best of
``repeat`` runs in CPU time, both libraries in the same process on one thread (bench/__init__.py
sets the BLAS threads; torch.set_num_threads(1) here).

Target (issue 24): every program within 1.5x torch's time.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import mytorch

try:  # torch is optional: without it there is nothing to compare with
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

TARGET = 1.5


def programs() -> dict[str, Callable[[ModuleType], Any]]:
    """``name -> run(lib)`` for each program (the test module holds them, with their data)."""
    from tests import test_real_programs as P

    from sklearn.datasets import load_digits

    d = load_digits()
    images = (d.images[:400] / 16.0).astype("float32")
    labels = d.target[:400].astype("int64")
    return {
        "nanoGPT (char)": lambda t: P.nanogpt_char(t, flash=True),
        "nanoGPT (masked softmax)": lambda t: P.nanogpt_char(t, flash=False),
        "makemore bigram+MLP": P.makemore,
        "DCGAN": P.dcgan,
        "GAT": P.gat,
        "word LM (LSTM)": P.word_language_model,
        "forward-forward": lambda t: P.forward_forward(t, images, labels),
        "polynomial tutorials": P.polynomial,
        "time-sequence (LSTMCell)": P.time_sequence_prediction,
        "Transformer LM": P.transformer_lm,
        "LSTM tagger": P.lstm_tagger,
        "n-gram embeddings": P.ngram_embeddings,
        "text classifier": P.text_classifier,
        "quickstart": lambda t: P.quickstart_classifier(t, images, labels),
        "CNN script": lambda t: P.cnn_script(t, images, labels),
        "MNIST-style": lambda t: P.mnist_style_script(t, images, labels, dropout=False),
        "fit curve (Adam)": lambda t: P.fit_curve(t, "adam"),
        "autograd basics": P.autograd_basics,
    }


def _best(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best CPU ms of each callable over ``repeat`` rounds, the libraries taking turns in every
    round (a busy machine's slow spell then falls on both, not on one library's whole series)."""
    for fn in runs.values():
        fn()  # warm up
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for k, fn in runs.items():
            t = time.process_time()  # CPU time: one thread each, other processes do not count
            fn()
            best[k] = min(best[k], time.process_time() - t)
    return {k: v * 1e3 for k, v in best.items()}


def measure(repeat: int = 3, names: list[str] | None = None) -> list[tuple[str, float, float]]:
    """``(program, mytorch ms, torch ms)`` for each program (torch ms is nan without torch)."""
    if torch is not None:
        torch.set_num_threads(1)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notes (sparse invariants, deprecations)
        for name, run in programs().items():
            if names is not None and name not in names:
                continue
            libs = {"mytorch": mytorch, **({"torch": torch} if torch is not None else {})}
            best = _best({k: (lambda run=run, lib=lib: run(lib)) for k, lib in libs.items()},
                         repeat)
            rows.append((name, best["mytorch"], best.get("torch", float("nan"))))
    return rows


def report(repeat: int = 3) -> tuple[str, list[str]]:
    """The programs table and the list of missed targets."""
    try:
        rows = measure(max(2, repeat))
    except ImportError as e:  # the test module needs pytest, the data scikit-learn
        return f"Whole programs: skipped ({e})", []
    lines = [f"Whole programs of tests/test_real_programs.py (CPU ms per run, best of "
             f"{max(2, repeat)}; one thread each)",
             f"{'program':<26}  {'mytorch':>9}  {'torch':>9}  {'my/torch':>8}  {'target':>7}  ok?"]
    missed = []
    for name, mine, ref in rows:
        if ref != ref:  # no torch
            lines.append(f"{name:<26}  {mine:9.1f}  {'-':>9}  {'-':>8}  {'-':>7}  -")
            continue
        ratio = mine / ref
        ok = ratio <= TARGET
        if not ok:
            missed.append(f"program {name}")
        lines.append(f"{name:<26}  {mine:9.1f}  {ref:9.1f}  {ratio:7.2f}x  "
                     f"{'<=' + str(TARGET) + 'x':>7}  {'yes' if ok else 'NO'}")
    return "\n".join(lines), missed
