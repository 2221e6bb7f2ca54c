"""What a watch's requests can carry: the host of a URL, header names and header values.

A value accepted when a watch is created must be one the fetcher can put on the wire, or
every check of the watch fails. These pure functions say what is wrong, in words fit for an
API error or a `file:line` problem, and never echo a header value (it may be a secret). The
API refuses with them (422, `refuse_unsendable`), the `.driftgate/` file models refuse with
them (`check_*` validators), and `controller.sources.http` asks again before it sends, for
rows stored before these rules and for values read from the controller's environment.

- Host names are ASCII: labels of 1 to 63 letters, digits, `_` and `-` (not first or last),
  at most 253 characters in all, one trailing dot allowed; an internationalized name is
  written in punycode, and an `xn--` label must be an A-label that IDNA 2008 accepts.
- A host whose last label is a number is an IPv4 address and must be written canonically:
  four decimal numbers 0-255 without leading zeros. `0177.0.0.1`, `1.2.3`, `0x7f.1` and
  `999.1.1.1` are refused, because resolvers read such forms differently (inet_aton reads
  the first as 127.0.0.1). IPv6 literals (in brackets) must be valid IPv6 addresses.
- Header names are RFC 9110 tokens. Header values are visible ASCII with spaces and tabs
  inside: no control characters (CR, LF, NUL ...), no leading or trailing whitespace, no
  characters outside ASCII. RFC 9110 field-content also allows obs-text (bytes 0x80-0xFF),
  but new fields should not use it and httpx sends text values as ASCII.

And how a destination URL (a webhook, Slack's incoming webhook) is shown to people
(`shown_destination`): scheme, host, port and path, without what may be a secret.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import idna

from controller.errors import Unprocessable

MAX_HOST_LENGTH = 253
MAX_LABEL_LENGTH = 63

# An e-mail address as a relay takes it in MAIL FROM and RCPT TO: a dot-atom local part and a
# host name of LDH labels (at least two). Nothing else (a display name, CR or LF) can reach a
# header.
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
)

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_FIELD_VALUE = re.compile(r"^(?:[\x21-\x7e](?:[\x20\x09\x21-\x7e]*[\x21-\x7e])?)?$")
_LABEL = re.compile(r"^[a-z0-9_-]+$")
# What the WHATWG URL parser (and inet_aton) reads as a number: decimal, or hex with 0x.
_NUMBER = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def host_problem(host: str) -> str | None:
    """What makes `host` (as in a URL, IPv6 without brackets) unsendable, or None."""
    if not host:
        return "the URL must include a host"
    shown = _shown(host)
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"host {shown} is not a valid IPv6 address"
        return None
    if not host.isascii():
        return f"host {shown} must be ASCII: write an internationalized name in punycode (xn--)"
    name = host.lower()
    name = name[:-1] if name.endswith(".") else name
    labels = name.split(".")
    if _NUMBER.match(labels[-1]):
        if not _is_canonical_ipv4(name) or name != host:
            return (
                f"host {shown} is not a canonical IPv4 address: write four decimal numbers "
                "0-255 without leading zeros"
            )
        return None
    if len(name) > MAX_HOST_LENGTH:
        return f"host {shown} is longer than {MAX_HOST_LENGTH} characters"
    for label in labels:
        problem = _label_problem(label)
        if problem is not None:
            return problem
    if name.startswith("xn--"):
        # httpx decodes a host that starts with an A-label as a whole (URL.host).
        try:
            idna.decode(name)
        except (idna.IDNAError, UnicodeError, ValueError):
            return f"host {shown} is not a valid internationalized host name (IDNA 2008)"
    return None


def url_problem(url: str, *, placeholders: bool = False) -> str | None:
    """What makes the host or port of an http(s) `url` unsendable, or None.

    With `placeholders`, a host that holds `{placeholders}` is not checked (a template's
    URL; the watch made from it is)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        return "the URL has an invalid host or port"
    if placeholders and _PLACEHOLDER.search(parts.netloc):
        return None
    return host_problem(host)


def header_name_problem(name: str) -> str | None:
    if not _TOKEN.match(name):
        return f"header name {_shown(name)} must be a token: letters, digits and !#$%&'*+-.^_`|~"
    return None


def header_value_problem(value: str) -> str | None:
    """What makes a header value unsendable, or None; the value itself is never shown."""
    if _FIELD_VALUE.match(value):
        return None
    if not value.isascii():
        return "the value must be ASCII (a character outside ASCII cannot be sent)"
    if re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value):
        return "the value must not contain line breaks or other control characters"
    return "the value must not start or end with a space or tab"


def header_problems(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """(header name, what is wrong) for every unsendable header."""
    found = []
    for name, value in headers.items():
        problem = header_name_problem(name) or header_value_problem(value)
        if problem is not None:
            found.append((name, problem))
    return found


def refuse_unsendable(
    *,
    urls: Mapping[str, str | None] | None = None,
    templates: Mapping[str, str | None] | None = None,
    headers: Mapping[str, str] | None = None,
    headers_path: str = "/headers",
) -> None:
    """Raise 422 naming every field (JSON pointer) whose value the fetcher cannot send.

    `urls` and `templates` map pointers to URLs (`templates` may hold `{placeholders}`)."""
    details: list[dict[str, str]] = []
    for pointer, url in (urls or {}).items():
        problem = url_problem(url) if url is not None else None
        if problem is not None:
            details.append({"path": pointer, "message": problem})
    for pointer, url in (templates or {}).items():
        problem = url_problem(url, placeholders=True) if url is not None else None
        if problem is not None:
            details.append({"path": pointer, "message": problem})
    for name, problem in header_problems(headers or {}):
        escaped = name.replace("~", "~0").replace("/", "~1")
        details.append({"path": f"{headers_path}/{escaped}", "message": problem})
    if details:
        summary = "; ".join(f"{d['path']}: {d['message']}" for d in details[:5])
        raise Unprocessable(f"cannot be sent: {summary}", details=details)


# pydantic validators (the `.driftgate/` file models): a ValueError becomes a file:line problem.


def check_url(url: str) -> str:
    problem = url_problem(url)
    if problem is not None:
        raise ValueError(problem)
    return url


def check_url_template(url: str) -> str:
    problem = url_problem(url, placeholders=True)
    if problem is not None:
        raise ValueError(problem)
    return url


def check_header_value(value: str) -> str:
    problem = header_value_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _label_problem(label: str) -> str | None:
    if not label:
        return "the host has an empty label (two dots in a row, or a leading dot)"
    shown = _shown(label)
    if len(label) > MAX_LABEL_LENGTH:
        return f"host label {shown} is longer than {MAX_LABEL_LENGTH} characters"
    if not _LABEL.match(label):
        return f"host label {shown} may hold only letters, digits, '-' and '_'"
    if label.startswith("-") or label.endswith("-"):
        return f"host label {shown} must not start or end with '-'"
    if label.startswith("xn--"):
        try:
            idna.decode(label)
        except (idna.IDNAError, UnicodeError, ValueError):
            return f"host label {shown} is not a valid punycode A-label (IDNA 2008)"
    return None


DEFAULT_PORTS = {"http": 80, "https": 443}
SECRET_SEGMENT = 16  # a path segment this long may be a token (Slack's last one is 24)


def shown_destination(url: str) -> str:
    """`url` as people may see it: scheme, host, port (the scheme's default written out) and
    path; no user info, a query shown as `?…`, no fragment, and a path segment of
    `SECRET_SEGMENT` characters or more (where webhooks keep their token) cut to its first
    four. `https://u:p@hooks.example.com/services/T0/B0/XXXXXXXXXXXXXXXXXXXXXXXX?t=1` reads
    `https://hooks.example.com:443/services/T0/B0/XXXX…?…`."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return "(an unreadable URL)"
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = port if port is not None else DEFAULT_PORTS.get(scheme)
    segments = [s if len(s) < SECRET_SEGMENT else f"{s[:4]}…" for s in parts.path.split("/")]
    shown = f"{scheme}://{host}{f':{port}' if port is not None else ''}{'/'.join(segments)}"
    return shown + ("?…" if parts.query else "")


def _is_canonical_ipv4(host: str) -> bool:
    try:
        return str(ipaddress.IPv4Address(host)) == host
    except ValueError:
        return False


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def destination_hint(url: str) -> str:
    """What a person may see of a destination: scheme and host, never the path or token."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}"


def address_hint(address: str) -> str:
    """What a person may see of an e-mail recipient: its first letter and domain."""
    local, _, domain = address.partition("@")
    return f"{local[:1]}…@{domain}"
