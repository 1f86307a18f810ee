"""Shared pytest fixtures (keep this file minimal)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["mine_plugin"]  # with MYTORCH_MINE set: which of the student's pieces a test ran

#: Test files of the book's tooling, not of the library: `make mine` runs every *other* test on the
#: student's pieces (the marker `library` is added to those automatically).
TOOLING = ("test_book_", "test_grader_", "test_lab", "test_mine", "test_layers", "test_web", "test_check_",
           "test_visible_rules",
           "test_binder", "test_nbval", "test_browser")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/fixtures/: small notebooks the tooling tests use."""
    return ROOT / "tests" / "fixtures"


def has_cuda() -> bool:
    """Whether CuPy sees a real CUDA device (then the simulated one is not used)."""
    try:
        import cupy  # noqa: PLC0415 - optional, only on GPU machines

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _cuda_mode(simulated: bool):
    import mytorch

    if has_cuda():
        pytest.skip("a real GPU is present: the simulated device is not used")
    mytorch.cuda.simulate(simulated)
    yield
    mytorch.cuda.simulate(False)


@pytest.fixture
def sim():
    """mytorch's simulated CUDA device for one test (device rules without a GPU)."""
    yield from _cuda_mode(True)


@pytest.fixture
def no_cuda():
    """No CUDA device at all, as on a machine without a GPU."""
    yield from _cuda_mode(False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the library's tests ``library``; skip tests marked ``gpu`` unless CuPy sees a GPU."""
    for item in items:
        if item.path.suffix == ".py" and item.path.parent.name == "tests" \
                and not item.path.name.startswith(TOOLING):
            item.add_marker(pytest.mark.library)
    if not any("gpu" in item.keywords for item in items) or has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy / 需要 CUDA GPU 和 CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def torch_flags_put_back():
    """Put back both libraries' global matmul flags after a test that sets them (nanoGPT's
    preamble turns TF32 on), so a later test comparing mytorch's defaults with torch's sees
    torch's defaults."""
    import torch as real

    import mytorch as mine

    saved = [(lib, lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32,
              lib.backends.cudnn.allow_tf32) for lib in (real, mine)]
    yield
    for lib, precision, matmul, cudnn in saved:
        lib.set_float32_matmul_precision(precision)
        lib.backends.cuda.matmul.allow_tf32, lib.backends.cudnn.allow_tf32 = matmul, cudnn
