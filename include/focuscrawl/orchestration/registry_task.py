"""The model registry's record of a loop's models as an Airflow task, after the loop's push.

:func:`outlink_registry_task` runs :func:`focuscrawl.outlinks.training.mirror` once ``score`` has pushed:
every stored version the registry (MLflow) lacks is logged, and the ``champion`` alias follows the store's.
A registry that is down costs the record, not the loop: the task says so with the fix and succeeds, and the
next run logs what this one could not (the store keeps every version).
"""

from __future__ import annotations


def outlink_registry_task(cfg, models: str):
    """An Airflow task ``register`` for the outlink models named in ``models`` (comma-separated; a template
    such as ``{{ params.models }}``)."""
    from airflow.sdk import task

    @task(task_id="register", retries=1)
    def register(names: str) -> list[str]:
        from focuscrawl.outlinks.training import mirror, model_store
        from focuscrawl.services.model_registry import connect

        registry = connect(cfg)
        if registry is None:
            return []
        done = mirror(model_store(cfg), registry, names.split(","))
        for line in done:
            print(f"register: {line}", flush=True)
        return done

    return register(models)


__all__ = ["outlink_registry_task"]
