"""Discovery as the MCP authorization spec describes it, read from the documents alone.

Pure: where to look for a server's protected-resource metadata (the `resource_metadata` of
its `WWW-Authenticate` challenge, then the RFC 9728 well-known URIs, path-inserted first),
what that metadata says (the `resource` must be the server's, the `authorization_servers`
must name the issuer the watch pins, if it pins one), where to look for the authorization
server's metadata (RFC 8414 and OpenID discovery, path-aware), and what that says (its
`issuer` must be the one asked for, its `token_endpoint` must be sendable). Each reader
returns the value or raises `DiscoveryProblem` with words for the check's message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

_PARAMETER = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


class DiscoveryProblem(Exception):
    """What a metadata document lacks or says wrong, in words for the check's message."""


@dataclass(frozen=True)
class ProtectedResource:
    """What the MCP server's metadata says: its resource identifier and the issuer chosen."""

    resource: str
    issuer: str
    scopes: list[str]


@dataclass(frozen=True)
class AuthorizationServer:
    """What the authorization server's metadata says that a token request needs."""

    issuer: str
    token_endpoint: str
    auth_methods: list[str] | None
    grant_types: list[str] | None


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707, as the spec asks): scheme and host in
    lower case, no fragment, no query, no trailing slash."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") if parts.path != "/" else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def challenge_parameters(header: str | None) -> dict[str, str]:
    """The parameters of a `Bearer` challenge (RFC 6750 3, RFC 9728 5.1), lower-case names."""
    if not header:
        return {}
    start = header.lower().find("bearer")
    if start < 0:
        return {}
    found: dict[str, str] = {}
    for name, quoted, plain in _PARAMETER.findall(header[start + len("bearer") :]):
        found.setdefault(name.lower(), quoted.replace('\\"', '"') if quoted else plain)
    return found


def resource_metadata_urls(server_url: str, challenge: str | None) -> list[str]:
    """Where the protected-resource metadata may be, in the order the spec gives."""
    urls: list[str] = []
    named = challenge_parameters(challenge).get("resource_metadata")
    if named:
        urls.append(urljoin(server_url, named))
    parts = urlsplit(server_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def read_protected_resource(
    document: Any, server_url: str, pinned_issuer: str | None
) -> ProtectedResource:
    """The resource and the issuer to use from RFC 9728 metadata. The `resource` must be the
    server's own URL or a parent of it (the token must be for this server); the issuer is
    the pinned one, which must be listed, else the first listed."""
    if not isinstance(document, dict):
        raise DiscoveryProblem("the protected-resource metadata is not a JSON object")
    resource = document.get("resource")
    if not isinstance(resource, str) or not resource:
        raise DiscoveryProblem("the protected-resource metadata has no resource")
    if not _covers(canonical_resource(resource), canonical_resource(server_url)):
        raise DiscoveryProblem(
            f"the protected-resource metadata is for {_short(resource)}, not this server"
        )
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not all(isinstance(s, str) and s for s in servers):
        raise DiscoveryProblem("the protected-resource metadata lists no authorization_servers")
    if not servers:
        raise DiscoveryProblem("the protected-resource metadata lists no authorization_servers")
    if pinned_issuer is not None:
        if not any(same_issuer(s, pinned_issuer) for s in servers):
            listed = ", ".join(_short(s) for s in servers[:5])
            raise DiscoveryProblem(
                f"the server names authorization servers {listed}, not the watch's "
                f"authorizationServer {_short(pinned_issuer)}"
            )
        issuer = pinned_issuer
    else:
        issuer = servers[0]
    scopes = document.get("scopes_supported")
    listed_scopes = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else []
    return ProtectedResource(resource, issuer, listed_scopes)


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (RFC 8414 3.1 and OpenID Connect Discovery 4, in
    the order the spec of 2025-11-25 gives)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def read_authorization_server(
    document: Any, issuer: str, *, server_url: str
) -> AuthorizationServer:
    """The token endpoint and what it accepts, from the issuer's metadata. Its `issuer` must
    be the one asked for (RFC 8414 3.3: metadata served for another issuer is refused); the
    token endpoint must be https, or http when the MCP server itself is (a test or a private
    network the operator allowed)."""
    if not isinstance(document, dict):
        raise DiscoveryProblem("the authorization server metadata is not a JSON object")
    said = document.get("issuer")
    if not isinstance(said, str) or not same_issuer(said, issuer):
        raise DiscoveryProblem(
            f"the authorization server metadata names issuer {_short(str(said))}, "
            f"not {_short(issuer)}"
        )
    endpoint = document.get("token_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise DiscoveryProblem("the authorization server metadata has no token_endpoint")
    scheme = urlsplit(endpoint).scheme.lower()
    allowed = {"https", urlsplit(server_url).scheme.lower()}
    if scheme not in allowed or scheme not in ("http", "https"):
        raise DiscoveryProblem(f"the token endpoint {_short(endpoint)} is not an https URL")
    return AuthorizationServer(
        said,
        endpoint,
        _strings(document.get("token_endpoint_auth_methods_supported")),
        _strings(document.get("grant_types_supported")),
    )


def same_issuer(one: str, other: str) -> bool:
    """Issuers compare as strings (RFC 8414), but a lone `/` as the path is no difference."""
    return _without_root_slash(one) == _without_root_slash(other)


def _without_root_slash(url: str) -> str:
    parts = urlsplit(url)
    return url[:-1] if parts.path == "/" and url.endswith("/") else url


def _covers(parent: str, child: str) -> bool:
    """Whether a token for resource `parent` may be used at `child` (same origin, and the
    path is the same or below it: RFC 8707's hierarchy, as the SDK reads it)."""
    p, c = urlsplit(parent), urlsplit(child)
    if (p.scheme, p.netloc) != (c.scheme, c.netloc):
        return False
    return (c.path.rstrip("/") + "/").startswith(p.path.rstrip("/") + "/")


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]


def _short(text: str) -> str:
    """A URL or value for a message: no query, bounded in length."""
    return text.split("?", 1)[0][:200]
