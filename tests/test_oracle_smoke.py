"""The oracle harness itself can fail: a wrong result must be caught."""
import numpy as np
import pytest
from oracle import Case, check, randn


def test_add_matches_torch():
    check(Case("add", lambda t, a, b: t.add(a, b, alpha=2), [randn(3, 4), randn(4)]))


def test_harness_catches_a_wrong_result():
    with pytest.raises(AssertionError):
        check(Case("wrong", lambda t, a: a + 1 if t.__name__ == "mytorch" else a + 2, [randn(3)]))
