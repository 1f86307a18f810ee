"""Pictures the chapters draw: memory layout and strides, broadcasting, gather and scatter, the
coordinates of ``interpolate(align_corners=...)`` and the layout of a ``PackedSequence``.

Labels are bilingual, so matplotlib must have a CJK font: :func:`use_cjk_font` registers the
Noto Sans CJK font shipped by the ``mplfonts`` package (no download, no system font needed).
The functions take any tensor-like object with ``shape``, ``stride()``, ``storage_offset()``,
``tolist()`` and ``untyped_storage()``/``storage()`` — a mytorch tensor or a real torch one.
"""
from __future__ import annotations

import warnings
from importlib import resources
from typing import Any

import matplotlib.pyplot as plt
from matplotlib import font_manager
from matplotlib.patches import FancyArrowPatch, Rectangle

__all__ = ["use_cjk_font", "show_memory", "show_broadcast", "show_align_corners",
           "show_packed_sequence", "show_gather_scatter", "show_hook_order", "CJK_FONT"]

CJK_FONT = "Noto Sans CJK SC"
_registered = False


def use_cjk_font() -> str:
    """Make matplotlib draw Chinese glyphs (not boxes); returns the font family name."""
    global _registered
    if not _registered:
        try:
            path = str(resources.files("mplfonts") / "fonts" / "NotoSansCJKsc-Regular.otf")
            font_manager.FontProperties(fname=path).get_name()  # the file is there and readable
        except (ModuleNotFoundError, FileNotFoundError) as e:
            raise RuntimeError("Chinese labels need the 'mplfonts' package (it ships the Noto Sans "
                               "CJK font): pip install mplfonts  /  中文标签需要 mplfonts 包") from e
        manager = font_manager.fontManager
        # The same font file on every machine: a system copy of the family (Debian's fonts-noto-cjk
        # has more weights) would change which file draws the glyphs, and whether matplotlib warns
        # that a weight is missing, depending on what the reader installed.
        manager.ttflist = [f for f in manager.ttflist if f.name != CJK_FONT]
        manager.addfont(path)
        getattr(manager, "_findfont_cached", None) and manager._findfont_cached.cache_clear()
        _registered = True
    plt.rcParams["font.sans-serif"] = [CJK_FONT, "DejaVu Sans"]
    plt.rcParams["font.family"] = "sans-serif"
    plt.rcParams["axes.unicode_minus"] = False
    return CJK_FONT


def _cell(ax: Any, x: float, y: float, text: str, color: str, alpha: float = 1.0) -> None:
    ax.add_patch(Rectangle((x, y), 1, 1, facecolor=color, edgecolor="black", alpha=alpha))
    ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=9)


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def show_memory(t: Any, title: str | None = None) -> Any:
    """Draw a 1-D or 2-D tensor above its storage, with an arrow from each element to its cell.

    Shows at a glance why a transpose or a slice needs no copy (same storage, other strides)
    and why ``expand`` costs nothing (stride 0: many elements, one cell).
    """
    use_cjk_font()
    shape = tuple(t.shape)
    if len(shape) > 2:
        raise ValueError(f"show_memory draws 1-D or 2-D tensors; got shape {shape}. "
                         "Index or reshape it first / 请先把张量变成一维或二维")
    rows, cols = (1, shape[0]) if len(shape) == 1 else (shape if shape else (1, 1))
    strides = tuple(t.stride()) if shape else ()
    st = (0, strides[0]) if len(shape) == 1 else (strides if shape else (0, 0))
    with warnings.catch_warnings():  # torch.Tensor.storage() is deprecated (TypedStorage)
        warnings.simplefilter("ignore", UserWarning)
        storage = list(t.storage().tolist()) if hasattr(t, "storage") else []
    offset = t.storage_offset()
    values = t.tolist()
    grid = [[values]] if not shape else ([values] if len(shape) == 1 else values)
    width = max(cols, len(storage)) + 1
    fig, ax = plt.subplots(figsize=(min(0.7 * width + 1, 14), 0.7 * (rows + 3) + 0.6))
    palette = plt.get_cmap("tab20")
    top = 2 + rows
    used: dict[int, str] = {}
    for i in range(rows):
        for j in range(cols):
            pos = offset + i * st[0] + j * st[1]
            color = palette(pos % 20)
            used[pos] = color
            _cell(ax, j, top - i, _fmt(grid[i][j]), color)
    for k, v in enumerate(storage):
        _cell(ax, k, 0, _fmt(v), used.get(k, "white"), 1.0 if k in used else 0.35)
        ax.text(k + 0.5, -0.35, str(k), ha="center", va="center", fontsize=7, color="gray")
    for i in range(rows):
        for j in range(cols):
            pos = offset + i * st[0] + j * st[1]
            ax.add_patch(FancyArrowPatch((j + 0.5, top - i), (pos + 0.5, 1), arrowstyle="->",
                                         color="gray", alpha=0.4, mutation_scale=8))
    ax.text(-0.1, top + 1.3, f"张量 / tensor: shape={shape}, stride={strides}, "
            f"storage_offset={offset}", fontsize=10)
    ax.text(-0.1, 1.25, "存储 / storage", fontsize=9, color="dimgray")
    ax.set_xlim(-0.3, width)
    ax.set_ylim(-0.8, top + 1.8)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def show_broadcast(a_shape: tuple, b_shape: tuple) -> Any:
    """Draw how two 2-D (or smaller) shapes stretch to their broadcast shape.

    Solid cells are real elements; pale cells are virtual copies made by broadcasting
    (stride 0: nothing is copied in memory).
    """
    use_cjk_font()
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    n = max(len(a_shape), len(b_shape))
    if n > 2:
        raise ValueError("show_broadcast draws shapes of at most 2 dimensions / 最多画二维形状")
    pa = (1,) * (2 - len(a_shape)) + a_shape
    pb = (1,) * (2 - len(b_shape)) + b_shape
    out = []
    for x, y in zip(pa, pb):
        if x != y and 1 not in (x, y):
            raise ValueError(f"shapes {a_shape} and {b_shape} do not broadcast: {x} vs {y} "
                             f"/ 形状不能广播")
        out.append(max(x, y))
    R, C = out
    fig, axes = plt.subplots(1, 3, figsize=(3 * (C + 1) * 0.6 + 1.5, (R + 2) * 0.6))
    for ax, shape, label, color in ((axes[0], pa, f"a {a_shape}", "tab:blue"),
                                    (axes[1], pb, f"b {b_shape}", "tab:orange"),
                                    (axes[2], (R, C), f"a + b → {tuple(out[2 - n:])}", "tab:green")):
        for i in range(R):
            for j in range(C):
                real = i < shape[0] and j < shape[1]
                _cell(ax, j, R - 1 - i, "" if not real else "·", color, 0.9 if real else 0.2)
        ax.set_xlim(-0.2, C + 0.2)
        ax.set_ylim(-0.2, R + 0.2)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(label, fontsize=10)
    fig.suptitle("淡色格子是广播出来的虚拟副本 / pale cells are virtual copies", fontsize=10)
    fig.tight_layout()
    return fig


def show_align_corners(n_in: int, n_out: int) -> Any:
    """Where each output pixel of a 1-D ``interpolate`` to ``n_out`` samples reads the input.

    Input pixels (blue squares, centres at 0 … n_in−1) below, output pixels (orange) above, both
    on the input's coordinate axis; each arrow lands on the source coordinate of one output pixel.
    ``align_corners=True`` puts the first and last output *centres* on the input's corner centres;
    ``False`` lines up the outer *edges*, and coordinates outside [0, n_in−1] are clamped (red).
    """
    use_cjk_font()
    fig, axes = plt.subplots(2, 1, figsize=(max(6.0, 1.6 * n_in + 2), 4.6))
    for ax, corners in zip(axes, (True, False)):
        step = (n_in - 1) / (n_out - 1) if corners else n_in / n_out  # output spacing, in input px
        for j in range(n_in):
            ax.add_patch(Rectangle((j - 0.5, 0), 1, 1, facecolor="tab:blue", alpha=0.35,
                                   edgecolor="black"))
            ax.plot(j, 0.5, "o", color="tab:blue")
            ax.text(j, -0.35, f"{j}", ha="center", fontsize=9)
        for i in range(n_out):
            centre = i * step if corners else (i + 0.5) * step - 0.5
            ax.add_patch(Rectangle((centre - step / 2, 2), step, 0.8, facecolor="tab:orange",
                                   alpha=0.35, edgecolor="black"))
            src = min(max(centre, 0.0), n_in - 1.0)
            color = "tab:red" if src != centre else "black"
            ax.add_patch(FancyArrowPatch((centre, 2), (src, 0.55), arrowstyle="->", color=color,
                                         mutation_scale=10))
            ax.text(centre, 2.95, f"{i}", ha="center", fontsize=9)
            ax.text(src + 0.04, 1.2, f"{src:.2g}", ha="left", fontsize=8, color=color)
        formula = "x = i·(n_in−1)/(n_out−1)" if corners else \
            "x = (i+0.5)·n_in/n_out − 0.5，截断 / clamped"
        ax.set_title(f"align_corners={corners}:  {formula}", fontsize=10)
        ax.set_xlim(-0.5 - step, n_in - 0.5 + step)
        ax.set_ylim(-0.6, 3.4)
        ax.axis("off")
    fig.text(0.01, 0.01, f"下：输入 {n_in} 个像素 / below: {n_in} input pixels；上：输出 {n_out} 个 / "
             f"above: {n_out} output pixels", fontsize=9, color="dimgray")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def show_packed_sequence(packed: Any) -> Any:
    """A ``PackedSequence`` (of mytorch or torch): the padded batch it stands for, and its ``data``.

    Left, one row per sequence (longest first) with the padding greyed out; right, ``data`` as the
    packing stores it: time step after time step, step ``t`` holding the ``batch_sizes[t]``
    sequences still running. Each sequence keeps its colour on both sides.
    """
    use_cjk_font()
    sizes = [int(b) for b in packed.batch_sizes.tolist()]
    order = packed.sorted_indices.tolist() if packed.sorted_indices is not None else \
        list(range(sizes[0]))
    lengths = [sum(1 for b in sizes if b > r) for r in range(sizes[0])]
    steps, total = len(sizes), sum(sizes)
    palette = plt.get_cmap("tab10")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(min(0.55 * (steps + total) + 3, 15),
                                                  0.6 * sizes[0] + 2.2),
                                   gridspec_kw={"width_ratios": [steps + 1, total + 1]})
    for r, (seq, n) in enumerate(zip(order, lengths)):
        for t in range(steps):
            real = t < n
            _cell(ax1, t, sizes[0] - 1 - r, f"{chr(97 + seq)}{t + 1}" if real else "0",
                  palette(seq % 10) if real else "lightgray", 0.6 if real else 0.4)
    ax1.set_title("填充后，从长到短 / padded, longest first", fontsize=10)
    ax1.set_xlim(-0.2, steps + 0.2)
    ax1.set_ylim(-0.3, sizes[0] + 0.2)
    x = 0
    for t, b in enumerate(sizes):
        for r in range(b):
            _cell(ax2, x + r, 1, f"{chr(97 + order[r])}{t + 1}", palette(order[r] % 10), 0.6)
        ax2.plot([x + 0.05, x + b - 0.05], [0.75, 0.75], color="black")
        ax2.text(x + b / 2, 0.45, f"t={t + 1}: {b}", ha="center", va="top", fontsize=8)
        x += b
    ax2.set_title(f"packed.data，batch_sizes = {sizes}", fontsize=10)
    ax2.set_xlim(-0.2, total + 0.2)
    ax2.set_ylim(-0.8, 2.3)
    for ax in (ax1, ax2):
        ax.set_aspect("equal")
        ax.axis("off")
    fig.tight_layout()
    return fig


def _grid(t: Any) -> list[list[Any]]:
    """A 2-D tensor (mytorch, torch) or nested list as a list of rows."""
    rows = t.tolist() if hasattr(t, "tolist") else t
    if not rows or not isinstance(rows[0], list):
        raise ValueError("show_gather_scatter draws 2-D tensors / 只画二维张量")
    return rows


def show_gather_scatter(data: Any, dim: int, index: Any, kind: str = "gather",
                        shape: tuple | None = None) -> Any:
    """Where each element goes in ``gather`` or ``scatter_`` along ``dim`` (2-D tensors).

    ``kind="gather"``: ``data`` is the input; each output cell ``(i, j)`` reads the input cell
    named by ``index[i][j]`` in dimension ``dim`` (its other coordinate is its own). ``kind=
    "scatter"``: ``data`` is ``src``, written into zeros of ``shape``; ``src[i][j]`` goes to the
    cell named by ``index[i][j]``. Arrows follow the values; an index cell has the colour of the
    element it moves, so the picture shows that ``index`` only replaces one coordinate.
    Panels, left to right: ``index``, the tensor read from, the result.
    """
    use_cjk_font()
    if dim not in (0, 1, -1, -2) or kind not in ("gather", "scatter"):
        raise ValueError("dim is 0 or 1 and kind 'gather' or 'scatter' / dim 只能是 0 或 1")
    dim %= 2
    vals, idx = _grid(data), _grid(index)
    rows, cols = len(idx), len(idx[0])
    palette = plt.get_cmap("tab20")

    def other(i: int, j: int) -> tuple[int, int]:  # the cell that index[i][j] names
        return (idx[i][j], j) if dim == 0 else (i, idx[i][j])

    if kind == "gather":
        out = [[vals[other(i, j)[0]][other(i, j)[1]] for j in range(cols)] for i in range(rows)]
        color = {(i, j): palette((other(i, j)[0] * len(vals[0]) + other(i, j)[1]) % 20)
                 for i in range(rows) for j in range(cols)}
        panels = [("下标 / index", idx, color),
                  ("输入 / input", vals, {other(i, j): color[i, j] for i in range(rows)
                                          for j in range(cols)}),
                  ("输出 / out", out, color)]
        moves = [((1, other(i, j)), (2, (i, j)), color[i, j]) for i in range(rows)
                 for j in range(cols)]
        title = f"out = gather(input, dim={dim}, index)"
    else:
        shape = tuple(shape) if shape is not None else (len(vals), len(vals[0]))
        res: list[list[Any]] = [[0] * shape[1] for _ in range(shape[0])]
        color = {(i, j): palette((i * len(vals[0]) + j) % 20) for i in range(rows)
                 for j in range(cols)}
        hit = {}
        for i in range(rows):
            for j in range(cols):
                r, c = other(i, j)
                res[r][c] = vals[i][j]
                hit[(r, c)] = color[i, j]
        panels = [("下标 / index", idx, color), ("源 / src", vals, color), ("结果 / self", res, hit)]
        moves = [((1, (i, j)), (2, other(i, j)), color[i, j]) for i in range(rows)
                 for j in range(cols)]
        title = f"self.scatter_(dim={dim}, index, src)"
    height = max(len(g) for _, g, _ in panels)
    starts, x = [], 0.0
    for _, g, _ in panels:
        starts.append(x)
        x += len(g[0]) + 1.6
    fig, ax = plt.subplots(figsize=(min(0.75 * x + 1, 14), 0.75 * height + 1.6))
    for (label, g, colors), x0 in zip(panels, starts, strict=True):
        for i, row in enumerate(g):
            for j, v in enumerate(row):
                c = colors.get((i, j))
                _cell(ax, x0 + j, height - 1 - i, _fmt(v), c if c is not None else "white",
                      0.75 if c is not None else 0.3)
        ax.text(x0, height + 0.25, label, fontsize=9)
    for (pa, (ia, ja)), (pb, (ib, jb)), c in moves:
        ax.add_patch(FancyArrowPatch((starts[pa] + ja + 0.5, height - 1 - ia + 0.5),
                                     (starts[pb] + jb + 0.5, height - 1 - ib + 0.5),
                                     arrowstyle="->", color=c, alpha=0.9, mutation_scale=10,
                                     linewidth=1.2, connectionstyle="arc3,rad=-0.12"))
    ax.set_title(title + "：箭头跟着数值走 / arrows follow the values", fontsize=10)
    ax.set_xlim(-0.3, x - 1.3)
    ax.set_ylim(-0.4, height + 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    return fig


def show_hook_order(title: str | None = None) -> Any:
    """A timeline of one ``model(x)`` then ``loss.backward()``: when each kind of hook runs."""
    use_cjk_font()
    steps = [
        ("forward pre-hooks\n前向预钩子", "(module, args)\n可替换输入 / may replace args", "#cfe2ff"),
        ("forward\n前向", "module.forward(*args)", "#d1e7dd"),
        ("forward hooks\n前向钩子", "(module, args, output)\n可替换输出 / may replace output",
         "#cfe2ff"),
        ("… loss.backward() …", "梯度从输出往回流\ngradients flow back", "#eeeeee"),
        ("backward pre-hooks\n反向预钩子", "(module, grad_output)", "#fff3cd"),
        ("backward hooks\n反向钩子", "(module, grad_input,\n grad_output)", "#fff3cd"),
    ]
    fig, ax = plt.subplots(figsize=(12.5, 2.6))
    width, gap = 1.85, 0.25
    for i, (head, body, color) in enumerate(steps):
        x = i * (width + gap)
        ax.add_patch(Rectangle((x, 0), width, 1.6, facecolor=color, edgecolor="black"))
        ax.text(x + width / 2, 1.15, head, ha="center", va="center", fontsize=10)
        ax.text(x + width / 2, 0.45, body, ha="center", va="center", fontsize=8)
        if i < len(steps) - 1:
            ax.add_patch(FancyArrowPatch((x + width, 0.8), (x + width + gap, 0.8),
                                         arrowstyle="-|>", mutation_scale=12))
    ax.text(0, -0.35, "model(x) = __call__：前三步 / the first three steps", fontsize=9)
    ax.text(3 * (width + gap), -0.35, "backward()：后三步 / the last three", fontsize=9)
    ax.set_xlim(-0.1, len(steps) * (width + gap))
    ax.set_ylim(-0.6, 1.8)
    ax.axis("off")
    ax.set_title(title or "钩子运行的顺序 / the order in which hooks run")
    fig.tight_layout()
    return fig
