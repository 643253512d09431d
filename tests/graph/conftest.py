"""Spark's Python workers must run this interpreter (it has focuscrawl, numpy, pyarrow): the job's
mapInPandas/applyInPandas steps execute there. Set before the shared session starts (collection
time); ``focuscrawl.spark.session_conf`` setting ``spark.pyspark.python`` would make this unneeded."""

import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
