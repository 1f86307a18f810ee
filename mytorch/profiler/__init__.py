"""``mytorch.profiler``: torch.profiler's interface over mytorch's recorder.

``profile`` records the operations of a block (or of chosen steps of a training loop, with a
``schedule``), ``record_function`` marks your own ranges, ``key_averages().table()`` prints torch's
table and ``export_chrome_trace`` writes a timeline for https://ui.perfetto.dev or
chrome://tracing. How the recording works without a dispatcher: ``mytorch/autograd/profiler.py``.
"""
from ..autograd.profiler import record_function
from ..autograd.profiler_util import DeviceType
from .profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile, kineto_available, profile,
                       schedule, supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function"]
