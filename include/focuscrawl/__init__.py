"""focuscrawl: the domain package.

Prioritisation methods, schedulers, features, estimators, metrics and schemas live here.
Nothing in this package imports Airflow, a Kafka client or a SparkSession at module level,
so the streaming side and the Spark side call the same small pieces of Python.
"""

__version__ = "0.1.0"
