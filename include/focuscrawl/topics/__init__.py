"""Kafka topics: their specs and names, the feedback topics the batch side pushes to the
running crawlers, and the changelogs that make stream stages restart-safe.
"""
