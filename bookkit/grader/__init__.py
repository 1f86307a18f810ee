"""``make grade``: grade a class's submissions safely, fast and reproducibly (see docs/grader.md).

Modules: ``submissions`` (find and read student files), ``regions`` (take only the solution
regions, splice them into the instructor's notebook), ``sandbox`` + ``runner`` (run untrusted code
in an isolated, limited child), ``protocol`` (the trusted verdicts), ``report`` (gradebook,
summary, bilingual feedback, atomic writes), ``batch`` (the whole class, in parallel, resumable),
``check`` (``make check`` for students), ``bench`` (``make bench-grade``).
"""
