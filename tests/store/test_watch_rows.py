"""A watch row's own parts: pointing a watch at a contract forgets what stood for the old one."""

from __future__ import annotations

from controller.store.models import Watch
from controller.store.watch_rows import set_contract


def fetched(url: str, watch_type: str) -> Watch:
    return Watch(
        url=url, watch_type=watch_type, etag='"v1"', last_modified="Mon", source_hash="ab" * 32
    )


def test_the_same_contract_keeps_its_validators_and_hash() -> None:
    watch = fetched("https://api.example.com/openapi.json", "openapi")
    set_contract(watch, "https://api.example.com/openapi.json", "openapi")
    assert (watch.etag, watch.last_modified, watch.source_hash) == ('"v1"', "Mon", "ab" * 32)


def test_another_url_forgets_them() -> None:
    watch = fetched("https://api.example.com/openapi.json", "openapi")
    set_contract(watch, "https://api.example.com/v2/openapi.json", "openapi")
    assert (watch.etag, watch.last_modified, watch.source_hash) == (None, None, None)
    assert watch.url == "https://api.example.com/v2/openapi.json"


def test_another_type_under_the_same_url_forgets_them() -> None:
    """The same bytes read as another kind of contract must be parsed as that kind."""
    watch = fetched("https://api.example.com/v1/charges", "openapi")
    set_contract(watch, "https://api.example.com/v1/charges", "rest")
    assert (watch.etag, watch.last_modified, watch.source_hash) == (None, None, None)
    assert watch.watch_type == "rest"


def test_a_new_watch_takes_its_contract() -> None:
    watch = Watch()
    set_contract(watch, "https://api.example.com/openapi.json", "openapi")
    assert (watch.url, watch.watch_type) == ("https://api.example.com/openapi.json", "openapi")
