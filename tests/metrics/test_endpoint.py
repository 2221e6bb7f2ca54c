"""`GET /metrics` on the app (`web.metrics`): open by default, behind a bearer token when
`metrics_token` is set (the token never logged), not a part of the API's description."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient

from controller.store.db import Database
from tests.conftest import make_settings
from tests.logrecords import Records
from tests.scrapes import Scrape

TOKEN = "metrics-token-7f3a9c"


@contextmanager
def recorded() -> Iterator[Records]:
    """The records of driftgate's loggers (which do not propagate further) meanwhile; after
    the app is made, as it sets their handlers."""
    kept = Records()
    driftgate = logging.getLogger("driftgate")
    driftgate.addHandler(kept)
    try:
        yield kept
    finally:
        driftgate.removeHandler(kept)


def test_metrics_answer_without_credentials_and_are_not_in_the_api(app: Flask) -> None:
    http = app.test_client()
    answer = http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    scraped = Scrape.parse(answer.get_data(as_text=True))
    assert scraped.value("driftgate_database_up") == 1
    assert scraped.types["driftgate_checks"] == "counter"
    assert scraped.types["driftgate_check_duration_seconds"] == "histogram"
    assert scraped.types["driftgate_watches"] == "gauge"
    document = http.get("/openapi.json").json
    assert document is not None and "/metrics" not in document["paths"]
    # Prometheus may ask for OpenMetrics; prometheus_client's negotiation answers it.
    open_metrics = http.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert open_metrics.headers["Content-Type"].startswith("application/openmetrics-text")
    assert open_metrics.get_data(as_text=True).rstrip().endswith("# EOF")


def test_a_metrics_token_is_required_when_set_and_never_logged(
    tmp_path: Path, database: Database
) -> None:
    from web.app import create_app

    settings = make_settings(tmp_path, database_url=database.url, metrics_token=TOKEN)
    http = create_app(settings, database=database).test_client()
    with recorded() as records:
        _ask_with_and_without_the_token(http)
    lines = [r for r in records.records if getattr(r, "fields", {}).get("path") == "/metrics"]
    assert [r.fields["status"] for r in lines] == [401] * 5 + [200, 200]  # type: ignore[attr-defined]
    for record in records.records:
        text = record.getMessage() + repr(getattr(record, "fields", {}))
        assert TOKEN not in text


def _ask_with_and_without_the_token(http: FlaskClient) -> None:
    refused = [
        http.get("/metrics"),
        http.get("/metrics", headers={"Authorization": "Bearer wrong"}),
        http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"}),
        http.get("/metrics", headers={"Authorization": f"Basic {TOKEN}"}),
        http.get("/metrics", headers={"Authorization": TOKEN}),
    ]
    for answer in refused:
        assert answer.status_code == 401
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert answer.json is not None and answer.json["error"] == "unauthorized"
        assert TOKEN not in answer.get_data(as_text=True)
    allowed = http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200
    assert Scrape.parse(allowed.get_data(as_text=True)).value("driftgate_database_up") == 1
    # Case of the scheme does not matter (RFC 9110); the token does.
    assert http.get("/metrics", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200
    # The API's own routes do not take the metrics token as a key.
    assert http.get("/api/watches", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 401
