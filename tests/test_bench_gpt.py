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


def test_programs_table_names_every_program_and_times_both_libraries():
    """bench/cases_programs.py: one row per program of tests/test_real_programs.py's kinds, with
    both libraries' times and the ratio against the target."""
    from bench import cases_programs

    progs = cases_programs.programs()
    assert {"nanoGPT (char)", "makemore bigram+MLP", "DCGAN", "GAT", "word LM (LSTM)",
            "forward-forward", "polynomial tutorials", "time-sequence (LSTMCell)"} <= set(progs)
    rows = cases_programs.measure(1, ["autograd basics"])
    assert [r[0] for r in rows] == ["autograd basics"] and rows[0][1] > 0 and rows[0][2] > 0
