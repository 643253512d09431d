"""The Airflow REST client (``focuscrawl.services.airflow.AirflowClient``) over a real HTTP server standing in for
Airflow's API: a read answered with a server error is asked again (a loaded API server answers one now and then),
a write never is, but a trigger, whose run id the client chooses, and a pause or unpause, which sets a state, are;
and a read that keeps failing raises with the answer."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import focuscrawl.services.airflow as airflow


@pytest.fixture
def api(monkeypatch):
    """``(client, answers, seen)``: ``answers[path]`` lists the statuses to give, in turn (then 200); 0 is a 200
    given after the client's timeout (0.5 s)."""
    answers: dict[str, list[int]] = {}
    seen: list[tuple[str, str]] = []
    posted: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            seen.append((self.command, self.path.split("?")[0]))
            if self.path == "/auth/token":
                body, status = {"access_token": "t"}, 201
            else:
                pending = answers.get(self.path.split("?")[0], [])
                status = pending.pop(0) if pending else 200
                late, status = status == 0, status or 200
                body = {"dags": [{"dag_id": "d"}]} if status == 200 else {"detail": "Internal Server Error"}
                if self.command == "POST":
                    sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    posted.append(sent)
                    body = {"dag_run_id": sent["dag_run_id"]} if status == 200 else {"detail": f"status {status}"}
                if late:  # the request was served; its answer comes after the client's timeout
                    time.sleep(1.0)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(airflow, "READ_RETRY_PAUSES", (0.0, 0.0))
    client = airflow.AirflowClient(f"http://127.0.0.1:{server.server_port}", "admin", "pw", timeout=0.5)
    client.posted = posted
    yield client, answers, seen
    server.shutdown()


def test_a_read_is_asked_again_after_a_server_error(api):
    client, answers, seen = api
    answers["/api/v2/dags"] = [500, 503]
    assert client.dags() == [{"dag_id": "d"}]
    assert [s for s in seen if s[1] == "/api/v2/dags"] == [("GET", "/api/v2/dags")] * 3


def test_a_read_that_keeps_failing_raises_with_the_answer(api):
    client, answers, seen = api
    answers["/api/v2/dags"] = [500, 500, 500, 500]
    with pytest.raises(airflow.AirflowError, match="GET /api/v2/dags -> 500: .*Internal Server Error"):
        client.dags()
    assert len([s for s in seen if s[1] == "/api/v2/dags"]) == 1 + len(airflow.READ_RETRY_PAUSES)


def test_a_read_whose_answer_came_too_late_is_asked_again(api):
    client, answers, seen = api
    answers["/api/v2/dags"] = [0]
    assert client.dags() == [{"dag_id": "d"}]
    assert len([s for s in seen if s[1] == "/api/v2/dags"]) == 2


def test_a_write_is_not_repeated(api):
    client, answers, seen = api
    answers["/api/v2/assets/events"] = [500]
    with pytest.raises(airflow.AirflowError, match="POST /api/v2/assets/events -> 500"):
        client.post_asset_event(7)
    assert [s for s in seen if s[1] == "/api/v2/assets/events"] == [("POST", "/api/v2/assets/events")]


def test_a_pause_or_unpause_whose_answer_was_lost_is_sent_again(api):
    # it sets a state: a second copy is harmless (the e2e's `up` failed on one 500 to an unpause)
    client, answers, seen = api
    answers["/api/v2/dags/d"] = [500, 0]
    client.unpause("d")
    assert [s for s in seen if s[1] == "/api/v2/dags/d"] == [("PATCH", "/api/v2/dags/d")] * 3
    answers["/api/v2/dags/d"] = [503]
    client.pause("d")
    assert len([s for s in seen if s[1] == "/api/v2/dags/d"]) == 5


def test_a_trigger_whose_answer_was_lost_is_sent_again_and_makes_one_run(api):
    # the first POST made the run but its answer was a 500 (or a timeout); the second is refused as a duplicate
    # of the id the client chose, which is the run asked for
    client, answers, seen = api
    answers["/api/v2/dags/d/dagRuns"] = [500, 409]
    run_id = client.trigger("d")
    assert run_id.startswith("manual__") and [p["dag_run_id"] for p in client.posted] == [run_id, run_id]
    answers["/api/v2/dags/d/dagRuns"] = [0, 409]  # made, but answered after the client's timeout
    timed_out = client.trigger("d")
    assert [p["dag_run_id"] for p in client.posted[2:]] == [timed_out, timed_out]
    answers["/api/v2/dags/d/dagRuns"] = [409]  # a conflict on the first request is another run's id: an error
    with pytest.raises(airflow.AirflowError, match="-> 409") as refused:
        client.trigger("d")
    assert (refused.value.status, refused.value.resent) == (409, False)
    answers["/api/v2/dags/d/dagRuns"] = [400]
    with pytest.raises(airflow.AirflowError, match="-> 400"):
        client.trigger("d")
    assert len(client.posted) == 6
