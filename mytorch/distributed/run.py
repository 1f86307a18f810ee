"""``python -m mytorch.distributed.run``: torchrun's interface, on MPI.

    python -m mytorch.distributed.run --nproc-per-node 2 train.py --lr 0.1

starts two copies of ``train.py`` whose environments hold what torchrun sets (``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``ROLE_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID`` ...), so the same script runs under
torchrun and here.

**Design.** The copies must be one MPI job, so the launcher does not spawn them itself: it runs
``mpiexec`` (Hydra, from the ``mpich`` wheel) with one block per rank, each with its own
``RANK``/``LOCAL_RANK``. Every rank starts in a small bootstrap (``--worker``) that joins MPI
*before* the script runs — a rank that crashed before ``MPI_Init`` would leave the others
waiting in it forever — then runs the script as ``__main__``. A rank that stops with an exception
tells the others (they raise ``DistBackendError`` naming it instead of hanging) and writes an
error file; when ``mpiexec`` returns, the launcher names the rank that failed first, like
torchrun's ``ChildFailedError``. One machine only (``--nnodes 1``); across machines, run
``mpiexec -f hostfile -n N python train.py`` directly (``init_process_group`` reads MPI's ranks).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import uuid
from typing import Any

from . import _world  # MPI itself is imported only by the ranks (_world.mpi)

__all__ = ["main", "get_args_parser", "mpiexec_command"]


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mytorch.distributed.run",
                                description="Start N copies of a training script as one MPI job "
                                            "(torchrun's interface).")
    p.add_argument("--nnodes", default="1:1", help="only 1 (one machine)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start: a number, or 'cpu' (one per core)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    for name in ("--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf", "--role",
                 "--max-restarts", "--monitor-interval", "--start-method", "--log-dir",
                 "--redirects", "--tee", "--local-ranks-filter"):
        p.add_argument(name, name.replace("-", "_").replace("__", "--"), default=None,
                       help="accepted for torchrun compatibility")
    p.add_argument("-m", "--module", action="store_true", help="run a module (python -m) instead")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the program directly, not with python")
    p.add_argument("--run-path", "--run_path", action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _mpiexec() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.path.exists(here) else shutil.which("mpiexec")
    if not found:
        raise SystemExit("mytorch.distributed.run: mpiexec not found. Install MPI from PyPI: "
                         "pip install mpich mpi4py (or pip install -e '.[dist]')")
    return found


def mpiexec_command(args: argparse.Namespace, run_dir: str) -> list[str]:
    """The MPMD ``mpiexec`` command line: one block per rank, each with its own environment."""
    if args.nproc_per_node in ("cpu", "auto"):
        nproc = os.cpu_count() or 1
    else:
        nproc = int(args.nproc_per_node)
    if str(args.nnodes) not in ("1", "1:1"):
        raise SystemExit("mytorch.distributed.run starts processes on this machine only "
                         "(--nnodes 1); across machines use mpiexec -f hostfile -n N python train.py")
    common = {"WORLD_SIZE": nproc, "LOCAL_WORLD_SIZE": nproc, "GROUP_RANK": args.node_rank,
              "ROLE_NAME": args.role or "default", "ROLE_WORLD_SIZE": nproc,
              "MASTER_ADDR": args.master_addr, "MASTER_PORT": args.master_port,
              "TORCHELASTIC_RUN_ID": args.rdzv_id or uuid.uuid4().hex[:8],
              "TORCHELASTIC_RESTART_COUNT": 0, "TORCHELASTIC_MAX_RESTARTS": 0,
              "MYTORCH_RUN_DIR": run_dir}
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        common["OMP_NUM_THREADS"] = 1  # as torchrun: N processes, not N x cores threads
    cmd = [_mpiexec()]
    for k, v in common.items():
        cmd += ["-genv", k, str(v)]
    program = [sys.executable, "-m", "mytorch.distributed.run", "--worker"]
    program += ["--module"] if args.module else []
    program += ["--no-python"] if args.no_python else []
    program += [args.training_script, *args.training_script_args]
    for rank in range(nproc):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", "-env", "RANK", str(rank), "-env", "LOCAL_RANK", str(rank),
                "-env", "ROLE_RANK", str(rank),
                "-env", "MYTORCH_ERROR_FILE", os.path.join(run_dir, f"error_{rank}.json"),
                *program]
    return cmd


def _report(run_dir: str, code: int) -> int:
    """After a failed run: name the rank that failed first and show its traceback."""
    errors = []
    for path in glob.glob(os.path.join(run_dir, "error_*.json")):
        with open(path) as f:
            errors.append(json.load(f))
    if not errors:
        print(f"mytorch.distributed.run: the job failed (mpiexec exit code {code}) and no rank "
              "left an error report: a rank was killed or crashed outside Python", file=sys.stderr)
        return code or 1
    origins = sorted({e["origin"] for e in errors})
    first = min((e for e in errors if e["rank"] == e["origin"]), key=lambda e: e["time"],
                default=errors[0])
    lines = [f"mytorch.distributed.run: rank {first['origin']} failed: {first['error']}"]
    others = sorted(e["rank"] for e in errors if e["rank"] != e["origin"])
    if others:
        lines.append(f"  ranks {others} stopped because of it")
    if len(origins) > 1:
        lines.append(f"  ranks that failed on their own: {origins}")
    lines.append(f"Traceback of rank {first['rank']}:\n{first['traceback']}")
    print("\n".join(lines), file=sys.stderr)
    return 1


def _whole_lines() -> None:
    """Write every printed line in one piece, so that lines of different ranks never mix. (With
    ``PYTHONUNBUFFERED`` set, ``print`` writes the text and its newline separately, and two ranks
    printing at once could give ``rank 0: …rank 1: …``.)"""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True, write_through=False)


def _worker(argv: list[str]) -> None:
    """One rank: join MPI first, then run the script as __main__, reporting any failure."""
    _whole_lines()
    module = argv and argv[0] == "--module"
    argv = argv[1:] if module else argv
    if argv and argv[0] == "--no-python":
        _world.start()
        os.execvp(argv[1], argv[1:])
    _world.start()
    sys.argv = list(argv)
    try:
        if module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            _world.record_failure(RuntimeError(f"exited with code {e.code}"))
        raise
    except BaseException as e:  # noqa: BLE001 - every failure must reach the other ranks
        _world.record_failure(e)
        who = f"[rank {os.environ.get('RANK', '?')}]"
        text = _world.user_traceback(e).rstrip("\n")
        sys.stderr.write(f"{who} " + text.replace("\n", f"\n{who} ") + "\n")
        sys.stderr.flush()
        raise SystemExit(1) from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        _worker(argv[1:])
        return 0
    args = get_args_parser().parse_args(argv)
    run_dir = tempfile.mkdtemp(prefix="mytorch_run_")
    try:
        code = subprocess.call(mpiexec_command(args, run_dir))
        return 0 if code == 0 else _report(run_dir, code)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _cli() -> Any:
    raise SystemExit(main())


if __name__ == "__main__":
    _cli()
