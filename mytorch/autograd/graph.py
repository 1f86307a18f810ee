"""``torch.autograd.graph``: the autograd graph, one import away.

The graph's machinery lives in small modules, by concern:

* ``node.py``          — :class:`Node`, ``AccumulateGrad`` and how ops record themselves (``record``)
* ``rules.py``         — derivative rules written once (``Rule``) and the node made from one
* ``saved_tensors.py`` — saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``)
* ``anomaly_mode.py``  — anomaly mode's switches and the forward traces nodes keep under it
* ``unbroadcast.py``   — undoing broadcasting in a backward formula (piece 02.1, ``sum_to``)
* ``masks.py``         — backward helpers of ops with a constant derivative (``mask_grad``)
* ``views.py``         — in-place changes through views (``rebase_history``, ``CopySlices``)

This module gathers what torch's ``torch.autograd.graph`` offers and what the operations
import to record themselves.
"""
from __future__ import annotations

from .masks import depends_on, mask_grad
from .node import (
                   FREED_GRAPH,
                   INFERENCE_SAVED,
                   NO_EDGE,
                   AccumulateGrad,
                   Node,
                   SavedOutput,
                   accumulate_node,
                   adopt_outputs,
                   edge,
                   needs_grad,
                   next_sequence_nr,
                   record,
                   record_outputs,
)
from .saved_tensors import save_on_cpu, saved_tensors_hooks
from .unbroadcast import sum_to, unbroadcast
from .views import CopySlices, check_inplace, rebase_history

__all__ = ["Node", "SavedOutput", "AccumulateGrad", "CopySlices", "record", "record_outputs", "needs_grad", "accumulate_node", "edge", "sum_to",
           "unbroadcast", "saved_tensors_hooks", "save_on_cpu", "mask_grad", "depends_on",
           "check_inplace", "rebase_history", "adopt_outputs", "next_sequence_nr", "NO_EDGE",
           "FREED_GRAPH", "INFERENCE_SAVED"]
