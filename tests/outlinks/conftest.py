"""Outlinks tests: Airflow's DAG import budget."""

import os

# Importing the DAG file (pyarrow, Airflow providers) can take longer than Airflow's 30 s default on
# a loaded two-core machine; the parse test is about wiring, not the machine's load.
os.environ.setdefault("AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT", "180")
