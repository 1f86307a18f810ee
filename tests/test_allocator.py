"""mytorch._allocator: glibc keeps freed blocks for reuse, unless the user opted out or tuned it."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

PROBE = "import mytorch._allocator as a; print(a.keep_freed_memory())"


def _run(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "MYTORCH_MALLOC"))}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="mallopt tuning only applies to glibc")
def test_applies_on_glibc() -> None:
    assert _run({}) == "True"


@pytest.mark.parametrize("env", [{"MYTORCH_MALLOC_REUSE": "0"}, {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                 {"MALLOC_TRIM_THRESHOLD_": "131072"}])
def test_left_alone_when_opted_out_or_tuned(env: dict[str, str]) -> None:
    assert _run(env) == "False"
