"""FAISS's bundled OpenBLAS on this CPU's kernels (``focuscrawl.core.blas``): the core chosen from the CPU's
flags, pinned before FAISS loads wherever the product loads it, and a late pin refused by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from focuscrawl.core.blas import openblas_coretype
from helpers import CHILD_TIMEOUT


@pytest.mark.parametrize(("flags", "core"), [
    ("fpu sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl", "SkylakeX"),
    ("fpu sse2 avx avx2 fma avx512f", "Haswell"),  # AVX-512 without BW/DQ/VL: SkylakeX kernels would fault
    ("fpu sse2 avx avx2 fma", "Haswell"),
    ("fpu sse2 sse3", None),
])
def test_the_core_follows_the_cpu_flags(tmp_path, flags, core):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    assert openblas_coretype(cpuinfo) == core


def test_no_cpuinfo_forces_nothing(tmp_path):
    assert openblas_coretype(tmp_path / "absent") is None


def _fresh(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT)


@pytest.mark.skipif(openblas_coretype() is None, reason="a CPU without AVX2: OpenBLAS detects it unaided")
def test_the_product_loads_faiss_on_the_pinned_kernels():
    done = _fresh("import json, numpy as np\n"
                  "from focuscrawl.outlinks.related import RELATED\n"
                  "from focuscrawl.core.blas import openblas_kernels\n"
                  "RELATED.create('EXACT', k=2).fit(np.eye(4, dtype=np.float32))\n"
                  "print(json.dumps(openblas_kernels()))")
    assert done.returncode == 0, done.stderr
    kernels = json.loads(done.stdout.splitlines()[-1])
    faiss_blas = [v for k, v in kernels.items() if k.startswith("faiss_cpu.libs/")]
    assert faiss_blas and all(v.endswith(" " + openblas_coretype()) for v in faiss_blas), kernels


@pytest.mark.skipif(openblas_coretype() is None, reason="a CPU without AVX2: nothing to pin")
def test_a_pin_after_faiss_loaded_is_refused():
    done = _fresh("import faiss\nfrom focuscrawl.core.blas import pin_openblas_kernels\npin_openblas_kernels()")
    assert done.returncode != 0 and "pin_openblas_kernels() where the process starts" in done.stderr
