"""Start, stop and report the engines of the embedded default (broker, Airflow, world, Spark cluster)."""
