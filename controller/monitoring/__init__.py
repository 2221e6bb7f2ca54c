"""Monitoring: what `GET /metrics` answers (Prometheus), for the web server and for a
controller that serves its own (`service.py`). The instruments every layer records on are
`controller.metrics`."""
