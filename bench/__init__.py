"""Benchmarks: ``python -m bench`` (make bench) runs them all, see ``bench/__main__.py``."""
