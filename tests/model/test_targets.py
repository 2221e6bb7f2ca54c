"""What a watch's requests can carry: hosts, header names and values (pure functions); and
how a destination URL is shown to people."""

from __future__ import annotations

import pytest

from controller.errors import Unprocessable
from controller.targets import (
    check_url_template,
    header_name_problem,
    header_value_problem,
    host_problem,
    refuse_unsendable,
    shown_destination,
    url_problem,
)

LONG_LABEL = "a" * 64
LONG_HOST = ".".join(["a" * 63] * 4) + ".com"  # 260 characters


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "api.example.com.",  # one trailing dot: a fully qualified name
        "my_service.example.com",
        "xn--bcher-kva.example",
        "shop.xn--bcher-kva.example",
        "123.example.com",  # a numeric label that is not the last one
        "a1.b2.c3x",
        "localhost",
        "a" * 63 + ".com",
        "8.8.8.8",
        "127.0.0.1",
        "0.0.0.0",
        "::1",  # IPv6, as urlsplit gives it without brackets
        "2606:4700::1111",
    ],
)
def test_sendable_hosts(host: str) -> None:
    assert host_problem(host) is None


@pytest.mark.parametrize(
    ("host", "needle"),
    [
        ("0177.0.0.1", "canonical IPv4"),  # octal: inet_aton reads 127.0.0.1
        ("999.1.1.1", "canonical IPv4"),
        ("1.2.3", "canonical IPv4"),  # inet_aton reads 1.2.0.3
        ("0x7f.0.0.1", "canonical IPv4"),
        ("0x7f.1", "canonical IPv4"),
        ("2130706433", "canonical IPv4"),  # 127.0.0.1 as one number
        ("01.2.3.4", "canonical IPv4"),
        ("127.0.0.1.", "canonical IPv4"),
        ("example.123", "canonical IPv4"),  # a numeric last label makes it an address
        ("xn--zz.com", "A-label"),
        ("shop.xn--zz.com", "A-label"),
        ("xn--.com", "start or end with '-'"),
        ("xn--ls8h.example", "A-label"),  # an emoji: not allowed by IDNA 2008
        ("xn--bcher-kva.my_service.example", "IDNA 2008"),  # httpx decodes the whole host
        (f"{LONG_LABEL}.com", "longer than 63"),
        (LONG_HOST, "longer than 253"),
        ("a..b", "empty label"),
        (".a", "empty label"),
        ("-a.com", "start or end with '-'"),
        ("a-.com", "start or end with '-'"),
        ("%41.com", "only letters, digits"),
        ("a!b.com", "only letters, digits"),
        ("café.com", "ASCII"),
        ("", "include a host"),
        ("::1::2", "IPv6"),
    ],
)
def test_unsendable_hosts(host: str, needle: str) -> None:
    problem = host_problem(host)
    assert problem is not None and needle in problem


def test_url_problem_reads_the_host_and_port() -> None:
    assert url_problem("https://api.example.com:8443/openapi.json?x=1") is None
    assert url_problem("https://user:pw@api.example.com/openapi.json") is None
    assert url_problem("http://[::1]:8080/spec.json") is None
    assert "canonical IPv4" in (url_problem("http://0177.0.0.1/spec.json") or "")
    assert "invalid host or port" in (url_problem("http://[::1/spec.json") or "")
    assert "invalid host or port" in (url_problem("http://example.com:99999/") or "")
    # A template's host may be a placeholder; the watch made from it is checked.
    assert url_problem("https://{host}/openapi.json", placeholders=True) is None
    assert url_problem("https://{host}/openapi.json") is not None
    assert check_url_template("https://{tenant}.example.com/openapi.json")
    with pytest.raises(ValueError, match="canonical IPv4"):
        check_url_template("https://999.1.1.1/{path}")


@pytest.mark.parametrize(
    "value", ["", "Bearer abc.def", "a\tb", "x" * 8192, "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"]
)
def test_sendable_header_values(value: str) -> None:
    assert header_value_problem(value) is None


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("café", "ASCII"),
        ("tok\u2028en", "ASCII"),
        ("a\r\nInjected: 1", "control characters"),
        ("a\nb", "control characters"),
        ("a\x00b", "control characters"),
        ("a\x7fb", "control characters"),
        (" leading", "start or end"),
        ("trailing ", "start or end"),
        ("\t", "start or end"),
    ],
)
def test_unsendable_header_values_are_named_never_shown(value: str, needle: str) -> None:
    problem = header_value_problem(value)
    assert problem is not None and needle in problem and value not in problem


def test_header_names_are_tokens() -> None:
    assert header_name_problem("X-Api-Key") is None
    assert header_name_problem("Private-Token") is None
    for bad in ("Bad Name", "X:Y", "é", ""):
        assert header_name_problem(bad) is not None


def test_refuse_unsendable_names_every_field() -> None:
    with pytest.raises(Unprocessable) as info:
        refuse_unsendable(
            urls={"/url": "http://999.1.1.1/spec.json", "/webhookUrl": None},
            templates={"/urlPattern": "https://{host}/x"},
            headers={"X-Ok": "fine", "X-Note": "café", "X~Odd": "a\nb"},
        )
    assert info.value.status == 422 and info.value.code == "validation_error"
    paths = [detail["path"] for detail in info.value.details]
    assert paths == ["/url", "/headers/X-Note", "/headers/X~0Odd"]
    assert "café" not in info.value.message
    refuse_unsendable(urls={"/url": "https://api.example.com/x"}, headers={"X-Ok": "fine"})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8123/hooks/driftgate", "http://127.0.0.1:8123/hooks/driftgate"),
        ("http://127.0.0.1/hook", "http://127.0.0.1:80/hook"),
        ("https://hooks.example.com", "https://hooks.example.com:443"),
        ("HTTPS://Hooks.Example.COM/Path", "https://hooks.example.com:443/Path"),
        (
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "https://hooks.slack.com:443/services/T0000/B0000/XXXX…",
        ),
        ("https://user:secret@example.com:8443/h?token=abc#x", "https://example.com:8443/h?…"),
        ("https://token@example.com/h", "https://example.com:443/h"),
        ("http://[::1]:9000/hook", "http://[::1]:9000/hook"),
        ("https://example.com:99999/h", "(an unreadable URL)"),
    ],
)
def test_a_destination_shows_scheme_host_port_and_path_but_no_secret(url: str, shown: str) -> None:
    assert shown_destination(url) == shown
    for secret in ("secret", "token", "abc", "XXXXXXXXXXXXXXXX"):
        assert secret not in shown_destination(url)
