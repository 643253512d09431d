"""The heavy imports Airflow's scheduler and DAG processor make once, for their forks (focuscrawl.services.preload)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from focuscrawl.services import preload as preload_module
from focuscrawl.services.airflow import PRELOADED, AirflowService
from focuscrawl.services.preload import ENV, MODULES, WARM, preload
from helpers import CHILD_TIMEOUT


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "ignore", "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=CHILD_TIMEOUT)


def test_only_the_scheduler_and_the_dag_processor_preload():
    env = {"A": "1"}
    assert set(PRELOADED) == {"scheduler", "dag-processor"}
    for component in ("scheduler", "dag-processor"):
        assert AirflowService.component_env(component, env) == {"A": "1", ENV: "1"}
    for component in ("api-server", "triggerer"):
        assert AirflowService.component_env(component, env) == env


def test_a_module_that_cannot_be_imported_is_skipped_with_a_warning(monkeypatch):
    # The warning itself, not caplog's view of it: a test that imported Airflow before this one in the same
    # worker leaves its logging configured so that caplog saw nothing (CI's xdist unit phase, 2026-12-05).
    said: list[str] = []
    monkeypatch.setattr(preload_module.log, "warning", lambda msg, *args: said.append(msg % args))
    took = preload(("json", "focuscrawl_no_such_module"), warm=(("json", "no_such_function"),))
    assert list(took) == ["json"]
    assert len(said) == 2 and "focuscrawl_no_such_module not done" in said[0] and "json.no_such_function" in said[1]


def test_airflow_local_settings_preloads_with_the_variable_and_a_fork_inherits_every_module():
    """As Airflow starts a component (airflow.settings imports airflow_local_settings): with the variable the
    libraries are imported before any fork, and a forked child (a task, a DAG parse) finds them loaded."""
    code = """
        import os, sys
        import airflow_local_settings
        read, write = os.pipe()
        if os.fork() == 0:
            found = [m for m in {modules!r} if m in sys.modules]
            text = sys.modules.get("focuscrawl.parse.text")
            if text is not None and text.known_languages.cache_info().currsize:
                found.append("warm")
            os.write(write, ",".join(found).encode())
            os._exit(0)
        os.close(write)
        os.wait()
        print(os.read(read, 4096).decode())
    """.format(modules=MODULES)
    env = {k: v for k, v in os.environ.items() if k != ENV}
    assert _run(code, env).stdout.strip() == ""
    done = _run(code, {**env, ENV: "1"})
    assert done.stdout.strip().split(",") == [*MODULES, "warm"], done.stderr[-2000:]  # the language model too
    assert WARM == (("focuscrawl.parse.text", "known_languages"),)
    assert "Skipping registering function" not in done.stdout + done.stderr
