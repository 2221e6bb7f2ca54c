"""Reading driftgate's `/metrics` in tests, with prometheus_client's own parser of the text
format: the samples of an answer, and the sum of those of a name whose labels include some."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    """One exposition: its families' names and types, and every sample."""

    types: dict[str, str]
    samples: list[tuple[str, dict[str, str], float]]

    @classmethod
    def parse(cls, text: str) -> Scrape:
        types: dict[str, str] = {}
        samples: list[tuple[str, dict[str, str], float]] = []
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            samples.extend((s.name, dict(s.labels), float(s.value)) for s in family.samples)
        return cls(types, samples)

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named `name` whose labels include `labels` (0 when none)."""
        return sum(
            value
            for sample, have, value in self.samples
            if sample == name and all(have.get(k) == v for k, v in labels.items())
        )

    def has(self, name: str, **labels: str) -> bool:
        return any(
            sample == name and all(have.get(k) == v for k, v in labels.items())
            for sample, have, _ in self.samples
        )

    def label_names(self, prefix: str = "driftgate_") -> set[str]:
        """The label names of the series whose name starts with `prefix`."""
        return {
            name
            for sample, labels, _ in self.samples
            if sample.startswith(prefix)
            for name in labels
        }

    def names(self) -> set[str]:
        return {sample for sample, _, _ in self.samples}


def scrape(base: str, token: str | None = None) -> Scrape:
    """GET `base/metrics` (with the bearer `token`), which must answer 200."""
    headers = {"User-Agent": "driftgate-tests"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    answer = httpx.get(f"{base}/metrics", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain"), answer.headers
    return Scrape.parse(answer.text)
