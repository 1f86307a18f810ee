"""Entry point for ``python -m bookkit``.

Run outside the book's environment (a system ``python3`` without the dependencies, or an older
Python), bookkit says what to do instead of printing a traceback: use ``make``, which builds
``.venv`` and runs bookkit with it.
"""

import sys

HINT = ("Run bookkit through make, which sets up .venv and uses it (make help lists the targets: "
        "make lint, make lab, make colab, …), or as .venv/bin/python -m bookkit …\n"
        "请通过 make 运行（make help 列出所有命令），它会建好并使用 .venv；或者运行 .venv/bin/python -m bookkit …")


def _run() -> int:
    if sys.version_info < (3, 11):
        print(f"error: bookkit needs Python 3.11 or newer; this is {sys.version.split()[0]} "
              f"({sys.executable}).\n{HINT}", file=sys.stderr)
        return 1
    try:
        from bookkit.cli import main
    except ModuleNotFoundError as exc:
        print(f"error: this Python ({sys.executable}) lacks bookkit's dependency {exc.name!r}.\n{HINT}",
              file=sys.stderr)
        return 1
    return main()


if __name__ == "__main__":
    sys.exit(_run())
