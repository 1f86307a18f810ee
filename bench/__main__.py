"""``python -m bench``: print mytorch vs NumPy vs torch timings and whether each target is met."""
from __future__ import annotations

import argparse
import sys

from . import (
    cases_autograd,
    cases_data,
    cases_gpt,
    cases_nn,
    cases_nn_loss,
    cases_nn_norm,
    cases_optim,
    cases_programs,
    cases_rnn,
    cases_small,
    cases_tensor,
    cases_training,
    distributed,
)
from .runner import format_table, run

SUITES = {"tensor": cases_tensor.CASES, "nn_loss": cases_nn_loss.CASES,
          "nn_norm": cases_nn_norm.CASES, "nn": cases_nn.CASES,
          "autograd": cases_autograd.CASES, "optim": cases_optim.CASES,
          "small": cases_small.CASES, "rnn": cases_rnn.CASES}
# Suites that measure something other than one call (e.g. a DataLoader's epoch) print their own
# table: report(repeat) -> (text, missed targets).
REPORTS = {"data": cases_data.report, "training": cases_training.report,
           "gpt": cases_gpt.report, "programs": cases_programs.report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("suites", nargs="*", help=f"case lists to run, of {list(SUITES) + list(REPORTS)} (default: all), or 'distributed' "
                        "(all_reduce vs mpi4py and DDP on 2 ranks: python -m bench.distributed)")
    parser.add_argument("--repeat", type=int, default=15, help="best of this many repeats")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if "distributed" in args.suites:  # several processes: its own launcher (bench/distributed.py)
        args.suites.remove("distributed")
        distributed.main(["--repeat", str(args.repeat)])
        if not args.suites:
            return 0
    unknown = set(args.suites) - set(SUITES) - set(REPORTS)
    if unknown:
        parser.error(f"unknown suite(s) {sorted(unknown)}; choose from {list(SUITES) + list(REPORTS)}")
    chosen = args.suites or [*SUITES, *REPORTS]
    cases = [c for name in chosen if name in SUITES for c in SUITES[name]]
    missed = []
    if cases:
        rows = run(cases, repeat=args.repeat)
        print(format_table(rows))
        missed = [r.case.op + " " + r.case.size for r in rows if r.ok is False]
    for name in chosen:
        if name in REPORTS:
            text, report_missed = REPORTS[name](max(1, args.repeat // 3))
            print("\n" + text)
            missed += report_missed
    if missed:
        print(f"\ntargets missed: {', '.join(missed)}")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
