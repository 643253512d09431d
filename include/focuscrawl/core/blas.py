"""BLAS kernels: FAISS's bundled OpenBLAS told which of its kernels suit this CPU, before it loads.

faiss-cpu 1.15.1 bundles OpenBLAS 0.3.15, whose CPU detection predates this machine's Xeon (AVX-512):
as installed it runs its Prescott (SSE3) kernels, and FAISS's exact search took 113 s against 29.0 s
with its SkylakeX (AVX-512) kernels on 100k real vectors, one thread (``docs/benchmarks.md``). OpenBLAS
reads ``OPENBLAS_CORETYPE`` once, when the library loads (its dynamic-architecture build, see OpenBLAS's
``driver/others/dynamic.c``), so :func:`pin_openblas_kernels` runs where a process starts, before anything
imports ``faiss``: the related-pages job's entry, the benchmark's, and :func:`load_faiss`, the one place
the product imports FAISS, for a process that did neither (a Spark Python worker unpickling an index
inherits the variable from the job that started it, and pins itself otherwise).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# OpenBLAS 0.3.15's core names, best first, with the CPU flags their kernels need (``/proc/cpuinfo``).
_CORES = (
    ("SkylakeX", {"avx512f", "avx512bw", "avx512dq", "avx512vl"}),
    ("Haswell", {"avx2", "fma"}),
)


def openblas_coretype(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The OpenBLAS core whose kernels this CPU runs (``None``: unknown, OpenBLAS detects on its own)."""
    try:
        text = cpuinfo.read_text()
    except OSError:  # not Linux: nothing to read, nothing forced
        return None
    flags = next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")),
                 set())
    return next((core for core, needs in _CORES if needs <= flags), None)


def pin_openblas_kernels() -> str | None:
    """Set ``OPENBLAS_CORETYPE`` for this process and the ones it starts (a value already set is kept:
    the operator's choice); returns the core in force. Raises when FAISS is already loaded without it,
    since its OpenBLAS has then chosen its kernels for good."""
    core = os.environ.get("OPENBLAS_CORETYPE") or openblas_coretype()
    if core and os.environ.get("OPENBLAS_CORETYPE") != core:
        if "faiss" in sys.modules:
            raise RuntimeError("faiss was imported before its OpenBLAS kernels were pinned: call "
                               "focuscrawl.core.blas.pin_openblas_kernels() where the process starts")
        os.environ["OPENBLAS_CORETYPE"] = core
    return core


def load_faiss():
    """The ``faiss`` module, its OpenBLAS on this CPU's kernels (:func:`pin_openblas_kernels` first)."""
    if "faiss" not in sys.modules:
        pin_openblas_kernels()
    import faiss

    return faiss


def openblas_kernels() -> dict[str, str]:
    """Each loaded OpenBLAS (by its folder and file) and the kernels it runs, from ``threadpoolctl``."""
    from threadpoolctl import threadpool_info

    return {Path(i["filepath"]).parent.name + "/" + Path(i["filepath"]).name: f"{i.get('version')} {i.get('architecture')}"
            for i in threadpool_info() if i.get("internal_api") == "openblas"}
