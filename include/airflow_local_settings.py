"""Airflow's local settings hook: Airflow imports this module in each of its processes as it starts
(``airflow.settings.import_local_settings``; ``include/`` is on the venv's path). In the scheduler and the
DAG processor focuscrawl starts (``focuscrawl.services.airflow`` sets the variable for those two), it imports
the libraries their forked tasks and DAG parses would each import again: ``focuscrawl.services.preload``.
"""

import os

from focuscrawl.services.preload import ENV, preload

if os.environ.get(ENV):
    preload()
