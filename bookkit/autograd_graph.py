"""Draw the autograd graph behind a tensor, read from ``grad_fn`` / ``next_functions``.

``draw_graph(y)`` works on your own tensors (mytorch or real torch) and needs only matplotlib:
nodes are laid out in layers by their distance from ``y`` (the output on top, the leaves at the
bottom), so the picture reads like the backward pass: gradients flow downwards along the arrows.
"""
from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .figures import use_cjk_font

__all__ = ["draw_graph", "graph_layers", "draw_scalar_graph"]

_COLORS = {"op": "#cfe2ff", "leaf": "#d1e7dd", "root": "#fff3cd"}


def _label(node: Any, names: dict) -> tuple[str, str]:
    """(text, kind) for a node: a leaf shows its variable's name and shape."""
    variable = getattr(node, "variable", None)
    if variable is not None:
        name = names.get(id(variable), "leaf")
        return f"{name}\n{tuple(variable.shape)}\nAccumulateGrad", "leaf"
    return type(node).__name__ if not hasattr(node, "_name") else node._name, "op"


def graph_layers(tensor: Any) -> list[list[Any]]:
    """The nodes behind ``tensor`` grouped by layer: a node sits one layer below its lowest parent.

    Longest-path layering (computed without recursion) keeps every arrow pointing downwards.
    """
    root = tensor.grad_fn
    if root is None:
        return []
    order, seen, stack = [], {root}, [root]
    while stack:  # collect the nodes
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    indeg = {n: 0 for n in order}
    for n in order:
        for nxt, _ in n.next_functions:
            if nxt is not None:
                indeg[nxt] += 1
    depth = {root: 0}
    ready = [root]
    while ready:  # topological order: a node's depth is final once all its parents are seen
        node = ready.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            depth[nxt] = max(depth.get(nxt, 0), depth[node] + 1)
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    layers: list[list[Any]] = [[] for _ in range(max(depth.values()) + 1)]
    for n in order:
        layers[depth[n]].append(n)
    return layers


def draw_graph(tensor: Any, names: dict[str, Any] | None = None, title: str | None = None) -> Any:
    """Draw the graph that ``tensor.backward()`` would walk; returns the matplotlib figure.

    ``names`` maps labels to leaf tensors (``{"x": x, "w": w}``) so leaves are shown by name.
    """
    use_cjk_font()
    by_id = {id(t): k for k, t in (names or {}).items()}
    layers = graph_layers(tensor)
    if not layers:
        raise ValueError("this tensor has no grad_fn: it is a leaf, or was made without recording"
                         " / 这个张量没有 grad_fn（是叶子，或没有记录计算图）")
    width = max(len(layer) for layer in layers)
    fig, ax = plt.subplots(figsize=(max(4.0, 2.6 * width), 1.5 * len(layers) + 1.2))
    pos = {}
    for row, layer in enumerate(layers):
        for col, node in enumerate(layer):
            pos[node] = ((col + 0.5) * width / len(layer) * 2.6, -row * 1.5)
    for node, (x, y) in pos.items():
        for nxt, _ in node.next_functions:
            if nxt is not None:
                x2, y2 = pos[nxt]
                ax.add_patch(FancyArrowPatch((x, y - 0.35), (x2, y2 + 0.35), arrowstyle="-|>",
                                             mutation_scale=12, color="#555555"))
    for node, (x, y) in pos.items():
        text, kind = _label(node, by_id)
        if node is tensor.grad_fn:
            kind = "root"
        ax.add_patch(FancyBboxPatch((x - 1.1, y - 0.35), 2.2, 0.7, boxstyle="round,pad=0.05",
                                    facecolor=_COLORS[kind], edgecolor="black"))
        ax.text(x, y, text, ha="center", va="center", fontsize=8)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 1.4, max(xs) + 1.4)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.axis("off")
    ax.set_title(title or "计算图：梯度沿箭头向下流\nthe graph: gradients flow down the arrows")
    fig.tight_layout()
    return fig


def draw_scalar_graph(root: Any, title: str | None = None) -> Any:
    """Draw a graph of scalar values (chapter 02's small engine): each box shows the operation
    that made the value, its ``data`` and its ``grad``; arrows go from a value to its inputs.

    Works on any objects with ``data``, ``grad``, ``op`` (a short string, "" for inputs),
    ``label`` (optional) and ``parents`` (a tuple of such objects).
    """
    use_cjk_font()
    depth, order, stack = {id(root): 0}, [root], [root]
    while stack:  # longest distance from the root, without recursion (a DAG: settle repeatedly)
        v = stack.pop()
        for p in v.parents:
            d = depth[id(v)] + 1
            if depth.get(id(p), -1) < d:
                if id(p) not in depth:
                    order.append(p)
                depth[id(p)] = d
                stack.append(p)
    layers: list[list[Any]] = [[] for _ in range(max(depth.values()) + 1)]
    for v in order:
        layers[depth[id(v)]].append(v)
    width = max(len(layer) for layer in layers)
    fig, ax = plt.subplots(figsize=(max(4.0, 2.4 * width), 1.45 * len(layers) + 1.2))
    pos = {}
    for row, layer in enumerate(layers):
        for col, v in enumerate(layer):
            pos[id(v)] = ((col + 0.5) * width / len(layer) * 2.4, -row * 1.45)
    for v in order:
        x, y = pos[id(v)]
        for p in v.parents:
            x2, y2 = pos[id(p)]
            ax.add_patch(FancyArrowPatch((x, y - 0.38), (x2, y2 + 0.38), arrowstyle="-|>",
                                         mutation_scale=12, color="#555555"))
    for v in order:
        x, y = pos[id(v)]
        kind = "root" if v is root else ("leaf" if not v.parents else "op")
        name = getattr(v, "label", "") or ""
        head = f"{name} = {v.op}" if name and v.op else (name or v.op or "·")
        ax.add_patch(FancyBboxPatch((x - 1.0, y - 0.38), 2.0, 0.76, boxstyle="round,pad=0.05",
                                    facecolor=_COLORS[kind], edgecolor="black"))
        ax.text(x, y, f"{head}\ndata {v.data:.4g}\ngrad {v.grad:.4g}", ha="center",
                va="center", fontsize=8)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 1.3, max(xs) + 1.3)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.axis("off")
    ax.set_title(title or "数值向上算，梯度向下传\nvalues flow up, gradients flow down")
    fig.tight_layout()
    return fig
