"""Airflow-facing decisions: DAG schedules from the project file, Asset events from landed tables,
and the priority weight rule (the one place that may import Airflow).
"""
