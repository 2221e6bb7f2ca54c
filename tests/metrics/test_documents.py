"""What is said about the metrics matches what is served: docs/metrics.md lists every metric
`/metrics` answers (and no other), the Grafana dashboard queries only series that exist and
shows every metric, and the sample Prometheus configuration scrapes `/metrics`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from flask import Flask

from controller import metrics
from tests.scrapes import Scrape

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "monitoring"
NAME = re.compile(r"\bdriftgate_[a-z_]+\b")


def served(app: Flask) -> Scrape:
    """The exposition once every recording function has recorded (so every series exists)."""
    metrics.check_done("openapi", "unchanged", 0.1)
    metrics.preflight_done("allowed", 0.002)
    metrics.delivery_done("webhook", True, 0.05)
    metrics.reconcile_done("fleet", "stalled", 0.5)
    metrics.reconcile_crashed("fleet")
    metrics.jobs_claimed(["check"])
    metrics.jobs_reaped(["check"])
    metrics.database_error("busy")
    metrics.database_outage()
    answer = app.test_client().get("/metrics")
    assert answer.status_code == 200
    return Scrape.parse(answer.get_data(as_text=True))


def family_names(scrape: Scrape) -> set[str]:
    """Each driftgate metric as docs name it: a counter with `_total`, others by family."""
    return {
        f"{name}_total" if kind == "counter" else name
        for name, kind in scrape.types.items()
        if name.startswith("driftgate_")
    }


def test_the_metrics_page_lists_every_metric_served(app: Flask) -> None:
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    rows = {
        match.group(1)
        for line in text.splitlines()
        if (match := re.match(r"^\| `(driftgate_[a-z_]+)` \|", line))
    }
    assert rows == family_names(served(app))


def test_the_dashboard_queries_series_that_exist_and_shows_every_metric(app: Flask) -> None:
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text(encoding="utf-8"))
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert expressions and all(panel["title"] for panel in dashboard["panels"])
    queried = {name for expr in expressions for name in NAME.findall(expr)}
    scrape = served(app)
    assert queried <= scrape.names(), queried - scrape.names()
    shown = {re.sub(r"_(bucket|count|sum)$", "", name) for name in queried}
    assert family_names(scrape) <= shown | {n.removesuffix("_total") for n in shown}
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_sample_scrape_configuration_scrapes_metrics() -> None:
    config = yaml.safe_load((EXAMPLES / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"driftgate", "driftgate-controller"}
    for job in jobs.values():
        assert job["metrics_path"] == "/metrics"
        assert job["authorization"]["type"] == "Bearer"
        assert job["static_configs"][0]["targets"]
