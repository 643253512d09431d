"""Shared contracts every layer uses: the registry, records, parameter objects, frontiers, redaction,
the interpreter's tools, command lines, near-duplicates, labelled corpora and status files.
"""
