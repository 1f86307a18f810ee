"""The GPT-step benchmark (bench/cases_gpt.py) times the same computation in both libraries."""
import numpy as np
import torch

import mytorch
from bench import cases_gpt


def test_gpt_bench_step_matches_torch():
    torch.manual_seed(0)
    mine, ref = cases_gpt.gpt(mytorch), cases_gpt.gpt(torch)
    cases_gpt.same_weights(mine, ref)
    losses = [cases_gpt.training(lib, m)() for lib, m in ((mytorch, mine), (torch, ref))]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    w_mine = mine.state_dict()["h.0.c_attn.weight"].numpy()
    w_ref = ref.state_dict()["h.0.c_attn.weight"].detach().numpy()
    np.testing.assert_allclose(w_mine, w_ref, rtol=1e-4, atol=1e-6)
