"""Registers focuscrawl's priority weight rule with Airflow (``focuscrawl.orchestration.airflow_priority.OldestRunFirst``):
every Airflow process loads this folder (``AIRFLOW__CORE__PLUGINS_FOLDER``), so DAGs can use the rule."""

from airflow.plugins_manager import AirflowPlugin

from focuscrawl.orchestration.airflow_priority import OldestRunFirst


class FocuscrawlPriorityPlugin(AirflowPlugin):
    name = "focuscrawl_priority"
    priority_weight_strategies = [OldestRunFirst]
