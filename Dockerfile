# One image for every focuscrawl role of docker-compose.yml: crawler, consumer, world, Spark
# master/workers (pyspark's own launcher), Airflow components. Same pins as the embedded default.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless maven make procps curl \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/focuscrawl
# Dependencies first, so a code change does not reinstall them.
COPY requirements.lock pyproject.toml Makefile ./
COPY jvm ./jvm
RUN python -m venv .venv \
 && .venv/bin/pip install -q uv==0.13.9 \
 && .venv/bin/uv pip install -q -p .venv/bin/python -r requirements.lock \
 # PostgreSQL driver: only the scale-out Airflow metadata DB needs it.
 && .venv/bin/uv pip install -q -p .venv/bin/python psycopg2-binary==2.9.10 \
 && make jars

COPY . .
RUN .venv/bin/uv pip install -q -p .venv/bin/python --no-deps -e . \
 && useradd --create-home --uid 50000 focuscrawl \
 && mkdir -p var && chown -R focuscrawl var

USER focuscrawl
ENV PATH=/opt/focuscrawl/.venv/bin:$PATH \
    SPARK_HOME=/opt/focuscrawl/.venv/lib/python3.11/site-packages/pyspark \
    FOCUSCRAWL_HOME=/opt/focuscrawl \
    FOCUSCRAWL_BIND_HOST=0.0.0.0
ENTRYPOINT []
CMD ["focuscrawl", "services", "status"]
