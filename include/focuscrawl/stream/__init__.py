"""The stream process scaffold every script under streaming/ runs on: arguments, the consume-
handle-produce loop, its registered sinks and its Prometheus metrics.
"""
