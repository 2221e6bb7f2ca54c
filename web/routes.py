"""A small route registry: every endpoint declares its method, path, models and statuses once.

The same declarations validate requests (pydantic), serialise responses, and build the
OpenAPI 3.1 document at `/openapi.json`, so the document cannot drift from the code. A
handler receives a `Call` (principal, parsed body and query, path values, a database
session) and returns a model, or a `Reply` for another status or extra headers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import import_module
from typing import Any, Literal, TypedDict, Unpack, get_args, get_origin, get_type_hints

from flask import Flask, Response, current_app, g, request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema
from sqlalchemy.orm import Session
from werkzeug.datastructures import Headers
from werkzeug.routing import BaseConverter, Map

from controller import __version__
from controller.crypto import SecretBox
from controller.errors import NotFound, PayloadTooLarge
from controller.model.plans import allows, minimum_plan
from controller.model.principal import Principal
from controller.orgs.service import plan_required, product_required
from controller.settings import Settings, env_name
from controller.store.db import Database
from controller.store.models import TrialSession
from web.body import parse_body, request_bytes, validate
from web.db import request_session
from web.ratelimit import RateLimiter

# optional_key: anonymous callers are served; a key, when sent, must be valid and names the org
Auth = Literal["none", "key", "key_or_trial", "optional_key"]
OPENAPI_VERSION = "3.1.0"
API_VERSION = "0.6.0"
CORRELATION_HEADER = "X-Service-Correlation-Id"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What the server answers on any route, before a handler runs (`web.front`, Flask): a body,
# request line or header section over its limit. Listed on every operation, from here.
EVERY_ROUTE = (413, 414, 431)

ERROR_TEXT = {
    400: "Malformed request: invalid JSON or a body/query that does not match the schema",
    401: "Missing, invalid or revoked credentials",
    403: "The plan or an overlay product does not allow this call",
    404: "Not found (or owned by another org)",
    409: "Conflict with the current state",
    413: "Request body too large (over DRIFTGATE_MAX_BODY_BYTES, or the route's own limit)",
    414: "Request line (method, path and query) too long",
    422: "Well-formed request that cannot be processed",
    429: "Rate limit exceeded",
    431: "Request header section too large",
    501: "A route of the hosted product that driftgate refuses by design (docs/compat.md)",
    502: "An upstream service (GitHub) refused or failed the call; the message names the cause",
    503: "Temporarily unavailable",
}


@dataclass
class Reply:
    """A handler result with an explicit status and optional extra headers.

    `raw` is a body already encoded as JSON, for a hot path that builds its answer itself
    (the run gate); otherwise `body` is serialised with its aliases."""

    status: int
    body: BaseModel | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None

    def encoded(self) -> bytes | None:
        """The body as JSON bytes, or None when the reply has no body."""
        if self.raw is not None:
            return self.raw
        return None if self.body is None else self.body.model_dump_json(by_alias=True).encode()


@dataclass(frozen=True)
class Resources:
    """What handlers use of the app, gathered once per app (`web.app.create_app`)."""

    settings: Settings
    database: Database
    secret_box: SecretBox
    limiter: RateLimiter


@dataclass
class Call:
    """Everything a handler needs about the current request, independent of who serves it
    (the Flask view, or the lane of a route that opts in: `web.lane`). Handlers never read
    Flask's globals; what they need of the request is here."""

    resources: Resources
    principal: Principal | None
    trial: TrialSession | None
    body: Any
    query: Any
    path: dict[str, str]
    now: datetime
    started: float
    correlation_id: str
    client_ip: str
    headers: Headers
    open_session: Callable[[], Session]
    read_body: Callable[[], bytes]
    host_url: str  # the scheme and host the request reached, `http://host:port/`

    @property
    def settings(self) -> Settings:
        return self.resources.settings

    @property
    def base_url(self) -> str:
        """Where links for the caller point: `public_base_url`, else the request's host."""
        return self.settings.public_base_url or self.host_url

    @property
    def database(self) -> Database:
        return self.resources.database

    @property
    def secret_box(self) -> SecretBox:
        return self.resources.secret_box

    @property
    def session(self) -> Session:
        """The request's database session, opened on first use; the server commits it when
        the handler returns a result and closes it after the answer."""
        return self.open_session()

    @property
    def principal_required(self) -> Principal:
        assert self.principal is not None, "route declared without auth"
        return self.principal

    @property
    def org_id(self) -> str:
        return self.principal_required.org_id

    def rate_limit(self, name: str, *, per_minute: int, burst: int) -> None:
        """Take a token from this client's bucket for `name`, or raise 429."""
        self.resources.limiter.hit(name, self.client_ip, per_minute=per_minute, burst=burst)


class Guard:
    """A reusable check on the principal, answering 403 when it fails."""

    def __init__(self, description: str, check: Callable[[Principal], None]) -> None:
        self.description = description
        self.check = check


def requires_plan(feature: str) -> Guard:
    """403 `plan_required` unless the caller's plan has `feature` (`controller.model.plans`)."""
    minimum = minimum_plan(feature)

    def check(principal: Principal) -> None:
        if not allows(principal.plan, feature):
            raise plan_required(principal.org_name, principal.plan, feature)

    return Guard(f"requires the {minimum} plan or higher", check)


def requires_product(product: str) -> Guard:
    def check(principal: Principal) -> None:
        if product not in principal.products:
            raise product_required(principal.org_name, principal.plan, product)

    return Guard(f"requires the {product} product", check)


@dataclass(frozen=True)
class HostedSwitch:
    """A family of routes of the hosted product (trial sessions, funnel events, the public
    coverage preview) that a self-hosted server serves only when its operator switches them
    on: anonymous callers would otherwise make rows (a trial's sandbox org, usage counters)
    or use the server as a public service. `setting` names the `Settings` field, off by
    default; off, the route answers 404 `not_found`, like a route that does not exist."""

    setting: str
    what: str  # the family, in words ("trial sessions")

    def __post_init__(self) -> None:
        if Settings.model_fields.get(self.setting) is None:
            raise ValueError(f"{self.setting}: no such setting")

    @property
    def variable(self) -> str:
        return env_name(self.setting)

    @property
    def description(self) -> str:
        return (
            f"Served only when {self.what} are switched on (`{self.setting}`, "
            f"`{self.variable}=true`; off by default): otherwise 404 `not_found`"
        )

    def enabled(self, settings: Settings) -> bool:
        return bool(getattr(settings, self.setting))

    def check(self, settings: Settings) -> None:
        if not self.enabled(settings):
            raise NotFound(
                f"not served by this server: {self.what} are off (an operator switches them "
                f"on with {self.variable}=true)"
            )


TRIAL_SESSIONS = HostedSwitch("trial_sessions_enabled", "trial sessions")
FUNNEL_EVENTS = HostedSwitch("funnel_events_enabled", "funnel events")
COVERAGE_PREVIEW = HostedSwitch("coverage_preview_enabled", "coverage previews without a key")


Handler = Callable[[Call], BaseModel | Reply | Response]


@dataclass(frozen=True)
class Route:
    method: str
    rule: str
    handler: Handler
    summary: str
    tag: str
    responses: dict[int, type[BaseModel] | None]
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    auth: Auth = "key"
    guards: tuple[Guard, ...] = ()
    errors: tuple[int, ...] = ()
    description: str | None = None
    raw_response: dict[str, Any] | None = None
    lane: bool = False
    # A body limit of its own, below the server's (`max_body_bytes`): 413 beyond it.
    max_body: int | None = None
    # The hosted product's name of a route (`controller.compat`): which client calls it, and
    # the route of driftgate's it maps onto (published as `x-driftgate-compat`).
    compat: dict[str, str] | None = None
    # A route of the hosted product that a self-hosted server serves only when switched on:
    # the `Settings` field that switches it (`HostedSwitch`); off, it answers 404 `not_found`
    # before anything of the request is read, as a route that does not exist.
    switch: HostedSwitch | None = None

    @property
    def operation_id(self) -> str:
        return self.handler.__name__

    @property
    def openapi_path(self) -> str:
        path = self.rule
        for name in self.path_params:
            path = path.replace(f"<{name}>", "{" + name + "}")
        return path

    @property
    def path_params(self) -> list[str]:
        return [part[1:-1].split(":")[-1] for part in self.rule.split("/") if part.startswith("<")]

    @property
    def error_statuses(self) -> list[int]:
        statuses = set(self.errors) | set(EVERY_ROUTE)
        if self.body is not None:
            statuses.add(400)
        if self.query is not None:
            statuses.add(400)
        if self.auth != "none":
            statuses.add(401)
        if self.guards:
            statuses.add(403)
        if self.path_params or self.switch is not None:
            statuses.add(404)
        return sorted(statuses)


Responses = dict[int, type[BaseModel] | None]


class Registry:
    """Collects routes from the API modules and installs them on a Flask app."""

    def __init__(self) -> None:
        self.routes: list[Route] = []
        self._openapi: dict[str | None, dict[str, Any]] = {}

    def tagged(self, tag: str) -> Router:
        """Declares the routes of one API module, published under `tag` (`Router`)."""
        return Router(self, tag)

    def route(
        self,
        method: str,
        rule: str,
        *,
        summary: str,
        tag: str,
        out: type[BaseModel] | None = None,
        status: int | None = None,
        responses: Responses | None = None,
        body: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        auth: Auth = "key",
        guards: Iterable[Guard] = (),
        errors: Iterable[int] = (),
        raw_response: dict[str, Any] | None = None,
        lane: bool = False,
        max_body: int | None = None,
        compat: dict[str, str] | None = None,
        switch: HostedSwitch | None = None,
    ) -> Callable[[Handler], Handler]:
        """Declare a route. Its success answer is `out` (by default the model the handler is
        annotated to return, if any) with `status` (200 with a model, 204 without); or
        `responses` lists them (status: model or None). `lane=True` lets `web.lane` serve it
        in front of Flask's per-request machinery (for a hot path): the handler is the same
        in both paths, so it must return a model or a `Reply`, never a Flask `Response`; only
        routes authenticated by API key (a trial session, where the route takes one, goes
        through Flask), without guards, path values or query can opt in."""
        if responses is not None and (out is not None or status is not None):
            raise ValueError(f"{method} {rule}: `responses`, or `out` and `status`, not both")

        def register(handler: Handler) -> Handler:
            if lane and (
                auth not in ("key", "key_or_trial") or guards or query is not None or "<" in rule
            ):
                raise ValueError(f"{method} {rule}: only key-authenticated plain routes can lane")
            self.routes.append(
                Route(
                    method=method.upper(),
                    rule=rule,
                    handler=handler,
                    summary=summary,
                    tag=tag,
                    responses=_answer(handler, out, status) if responses is None else responses,
                    body=body,
                    query=query,
                    auth=auth,
                    guards=tuple(guards),
                    errors=tuple(errors),
                    description=(handler.__doc__ or "").strip() or None,
                    raw_response=raw_response,
                    lane=lane,
                    max_body=max_body,
                    compat=compat,
                    switch=switch,
                )
            )
            return handler

        return register

    def install(
        self,
        app: Flask,
        authenticate: Callable[[Auth], tuple[Principal | None, TrialSession | None]],
    ) -> None:
        app.url_map.converters["except"] = _Except
        for route in self.routes:
            app.add_url_rule(
                self._flask_rule(route),
                endpoint=route.operation_id,
                view_func=_make_view(route, authenticate),
                methods=[route.method],
            )

    def _flask_rule(self, route: Route) -> str:
        """`route.rule`, with each path value that stands where another route has a fixed
        segment refusing that segment: `/api/watches/from-template` is its own path for every
        method (405 for GET, as documented), never a watch id."""
        parts = route.rule.split("/")
        for index, part in enumerate(parts):
            if not part.startswith("<") or ":" in part:
                continue
            words = sorted(
                {
                    other_parts[index]
                    for other in self.routes
                    if len(other_parts := other.rule.split("/")) > index
                    and other_parts[:index] == parts[:index]
                    and not other_parts[index].startswith("<")
                }
            )
            if words:
                quoted = ", ".join(repr(word) for word in words)
                parts[index] = f"<except({quoted}):{part[1:-1]}>"
        return "/".join(parts)

    def openapi(self, settings: Settings) -> dict[str, Any]:
        """The OpenAPI document, built once per public base URL (all it depends on)."""
        key = settings.public_base_url
        if key not in self._openapi:
            self._openapi[key] = build_openapi(self.routes, settings)
        return self._openapi[key]


class RouteOptions(TypedDict, total=False):
    """What a route declares besides its method, rule and summary (`Registry.route`)."""

    tag: str
    out: type[BaseModel] | None
    status: int
    responses: Responses
    body: type[BaseModel] | None
    query: type[BaseModel] | None
    auth: Auth
    guards: Iterable[Guard]
    errors: Iterable[int]
    raw_response: dict[str, Any] | None
    lane: bool
    max_body: int | None
    compat: dict[str, str] | None
    switch: HostedSwitch | None


class Router:
    """Declares the routes of one API module, each published under the module's tag unless
    it names another: `route = REGISTRY.tagged("watches")`, then
    `@route("GET /api/watches/<watch_id>", "Read a watch")` over a handler annotated to
    return the answer's model (`Registry.route` says the rest)."""

    def __init__(self, registry: Registry, tag: str) -> None:
        self.registry = registry
        self.tag = tag

    def __call__(
        self, pattern: str, summary: str, **options: Unpack[RouteOptions]
    ) -> Callable[[Handler], Handler]:
        """Declare the route of `pattern` (`METHOD /rule`)."""
        method, _, rule = pattern.partition(" ")
        if not rule.startswith("/"):
            raise ValueError(f"{pattern!r}: a route is `METHOD /rule`")
        options.setdefault("tag", self.tag)
        return self.registry.route(method, rule, summary=summary, **options)


def _make_view(
    route: Route, authenticate: Callable[[Auth], tuple[Principal | None, TrialSession | None]]
) -> Callable[..., Response]:
    def view(**path: str) -> Response:
        resources: Resources = current_app.extensions["driftgate.resources"]
        if route.switch is not None:
            route.switch.check(resources.settings)
        principal, trial = authenticate(route.auth)
        if principal is not None:
            g.org_id = principal.org_id
            for guard in route.guards:
                guard.check(principal)
        if any(_CONTROL.search(value) for value in path.values()):
            # No id, slug or name holds a control character (Postgres text cannot even hold
            # NUL): such a path names nothing.
            raise NotFound("not found")
        query = _parse_query(route.query) if route.query is not None else None
        body = _parse_body(route.body, route.max_body) if route.body is not None else None
        call = Call(
            resources=resources,
            principal=principal,
            trial=trial,
            body=body,
            query=query,
            path=path,
            now=datetime.now(UTC),
            started=g.started,
            correlation_id=g.correlation_id,
            client_ip=request.remote_addr or "unknown",
            headers=request.headers,
            open_session=request_session,
            read_body=lambda: request_bytes(request),
            host_url=request.host_url,
        )
        result = route.handler(call)
        if isinstance(result, Response):
            return result  # a streamed body; the handler owns its transaction
        if "db_session" in g:
            g.db_session.commit()
        reply = as_reply(route, result)
        content = reply.encoded()
        if content is None:
            response = Response(status=reply.status)
        else:
            response = Response(content, status=reply.status, mimetype="application/json")
        response.headers.update(reply.headers)
        return response

    view.__name__ = route.operation_id
    return view


def _answer(handler: Handler, out: type[BaseModel] | None, status: int | None) -> Responses:
    """A route's one success answer: `out`, else the model its handler is annotated to
    return (none for a `Reply` or a `Response`), with `status` (200 with a model, else 204)."""
    model = out if out is not None else get_type_hints(handler).get("return")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        model = None
    return {status or (204 if model is None else 200): model}


def as_reply(route: Route, result: BaseModel | Reply) -> Reply:
    """A handler's result as a `Reply` (a bare model answers the route's success status)."""
    if isinstance(result, Reply):
        return result
    return Reply(min(s for s in route.responses if s < 300), result)


def _parse_body(model: type[BaseModel], limit: int | None = None) -> BaseModel:
    if limit is not None and (request.content_length or 0) > limit:
        raise PayloadTooLarge(f"the request body is larger than {limit // 1024} KB")
    raw = request_bytes(request)
    if limit is not None and len(raw) > limit:
        raise PayloadTooLarge(f"the request body is larger than {limit // 1024} KB")
    return parse_body(model, raw)


def _parse_query(model: type[BaseModel]) -> BaseModel:
    data: dict[str, Any] = {}
    list_fields = {
        (info.alias or name)
        for name, info in model.model_fields.items()
        if get_origin(info.annotation) is list or list in get_args(info.annotation)
    }
    for key in request.args:
        values = request.args.getlist(key)
        data[key] = values if key in list_fields else values[-1]
    return validate(model, data, "query")


def _refuses_empty(model: type[BaseModel]) -> bool:
    """Whether `{}` (what an empty body reads as) is refused by `model`."""
    try:
        model.model_validate({})
    except ValidationError:
        return True
    return False


class _Except(BaseConverter):
    """A path segment other than the given words (which other routes own at that place)."""

    def __init__(self, url_map: Map, *words: str) -> None:
        super().__init__(url_map)
        self.regex = "(?!(?:" + "|".join(re.escape(w) for w in words) + ")(?:/|$))[^/]+"


class ErrorEnvelope(BaseModel):
    """The JSON body of every error response."""

    error: str
    message: str
    details: Any = None


def build_openapi(routes: list[Route], settings: Settings) -> dict[str, Any]:
    """The OpenAPI 3.1.0 document of the registered routes."""
    inputs: set[type[BaseModel]] = {r.body for r in routes if r.body} | {
        r.query for r in routes if r.query
    }
    outputs: set[type[BaseModel]] = {m for r in routes for m in r.responses.values() if m}
    outputs.add(ErrorEnvelope)
    models: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = [
        *((m, "validation") for m in sorted(inputs, key=lambda m: m.__name__)),
        *((m, "serialization") for m in sorted(outputs, key=lambda m: m.__name__)),
    ]
    refs, top = models_json_schema(
        models, ref_template="#/components/schemas/{model}", by_alias=True
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    refs, schemas = _published_names(refs, schemas)
    for component in schemas.values():
        _tighten(component)
    header = {CORRELATION_HEADER: {"$ref": "#/components/headers/CorrelationId"}}
    error_ref = refs[(ErrorEnvelope, "serialization")]

    paths: dict[str, Any] = {}
    for route in sorted(routes, key=lambda r: (r.openapi_path, r.method)):
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "tags": [route.tag],
            "parameters": [],
            "responses": {},
        }
        if route.description:
            operation["description"] = route.description
        if route.compat is not None:
            operation["x-driftgate-compat"] = route.compat
        if route.guards:
            notes = "; ".join(g.description for g in route.guards)
            operation["description"] = (
                operation.get("description", "") + f"\n\nAccess: {notes}."
            ).strip()
        if route.switch is not None:
            operation["description"] = (
                operation.get("description", "") + f"\n\n{route.switch.description}."
            ).strip()
        if route.auth == "none":
            operation["security"] = []
        elif route.auth == "optional_key":
            operation["security"] = [{}, {"bearerAuth": []}, {"apiKeyHeader": []}]
        elif route.auth == "key":
            operation["security"] = [{"bearerAuth": []}, {"apiKeyHeader": []}]
        else:
            operation["security"] = [{"bearerAuth": []}, {"apiKeyHeader": []}, {"trialSession": []}]
        for name in route.path_params:
            operation["parameters"].append(
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "maxLength": 200},
                }
            )
        operation["parameters"].append({"$ref": "#/components/parameters/CorrelationId"})
        if route.query is not None:
            query_schema = _deref(schemas, refs[(route.query, "validation")])
            for name, prop in query_schema.get("properties", {}).items():
                param: dict[str, Any] = {"name": name, "in": "query", "schema": prop}
                if name in query_schema.get("required", []):
                    param["required"] = True
                if prop.get("type") == "array":
                    param["style"], param["explode"] = "form", True
                if "description" in prop:
                    param["description"] = prop["description"]
                operation["parameters"].append(param)
        if route.body is not None:
            operation["requestBody"] = {
                # An empty body reads as {}: required only when {} would be refused.
                "required": _refuses_empty(route.body),
                "content": {"application/json": {"schema": refs[(route.body, "validation")]}},
            }
        for status, model in sorted(route.responses.items()):
            response: dict[str, Any] = {
                "description": _status_text(status, route),
                "headers": header,
            }
            if model is not None:
                response["content"] = {
                    "application/json": {"schema": refs[(model, "serialization")]}
                }
                if route.raw_response is not None and status < 300:
                    # Other forms of the same answer (a CSV download of a JSON view).
                    response["content"].update(
                        (media, form)
                        for media, form in route.raw_response.items()
                        if media != "application/json"
                    )
            elif route.raw_response is not None and status < 300:
                response["content"] = route.raw_response
            operation["responses"][str(status)] = response
        for status in route.error_statuses:
            operation["responses"].setdefault(
                str(status),
                {
                    "description": ERROR_TEXT.get(status, "Error"),
                    "headers": header,
                    "content": {"application/json": {"schema": error_ref}},
                },
            )
        operation["responses"]["500"] = {
            "description": "Unexpected server error (logged; the body never holds details)",
            "headers": header,
            "content": {"application/json": {"schema": error_ref}},
        }
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = operation

    servers = [{"url": settings.public_base_url}] if settings.public_base_url else [{"url": "/"}]
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "driftgate",
            "version": API_VERSION,
            "description": (
                "Self-hosted contract drift monitor and run gate. "
                f"Server build {__version__}. Errors use the envelope "
                "{error, message, details}."
            ),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": servers,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Authorization: Bearer dg_...",
                },
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "trialSession": {"type": "apiKey", "in": "header", "name": "X-Service-Trial"},
            },
            "headers": {
                "CorrelationId": {
                    "description": "Echo of the request's correlation id, or a generated one",
                    "schema": {"type": "string"},
                }
            },
            "parameters": {
                "CorrelationId": {
                    "name": CORRELATION_HEADER,
                    "in": "header",
                    "required": False,
                    "description": (
                        "Caller's correlation id, echoed in the response when it is 1-128 of "
                        "A-Z a-z 0-9 . _ : - ; any other value is replaced by a generated id "
                        "(never refused)"
                    ),
                    "schema": {"type": "string"},
                }
            },
        },
    }


def _published_names(
    refs: dict[Any, Any], schemas: dict[str, Any]
) -> tuple[dict[Any, Any], dict[str, Any]]:
    """Component names that do not move with the code. Pydantic names a model whose class name
    another model shares by its module path (`controller__drift__service__IncidentOut`); a
    client generated from this document uses that name as a type, so a model that moved keeps
    the name it was published under (its `published_name`), and the document stays the same."""
    renames: dict[str, str] = {}
    for name in schemas:
        qualified, _, suffix = name.partition("-")
        module, _, class_name = qualified.replace("__", ".").rpartition(".")
        if not module.startswith("controller."):
            continue
        published = getattr(
            getattr(import_module(module), class_name, None), "published_name", None
        )
        if isinstance(published, str):
            renames[name] = published + (f"-{suffix}" if suffix else "")
    if not renames:
        return refs, schemas
    targets = {
        f"#/components/schemas/{old}": f"#/components/schemas/{new}" for old, new in renames.items()
    }

    def renamed(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: targets.get(v, v) if k == "$ref" and isinstance(v, str) else renamed(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [renamed(item) for item in value]
        return value

    return (
        {key: renamed(ref) for key, ref in refs.items()},
        dict(
            sorted(
                ((renames.get(n, n), renamed(b)) for n, b in schemas.items()), key=lambda i: i[0]
            )
        ),
    )


def _tighten(schema: Any) -> None:
    """Make the published schema say exactly what the models accept.

    Drops `default: null` from properties that refuse null (absent means unchanged), and
    closes maps whose keys are constrained by `patternProperties`.
    """
    if isinstance(schema, list):
        for item in schema:
            _tighten(item)
        return
    if not isinstance(schema, dict):
        return
    if "patternProperties" in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    properties = schema.get("properties")
    for prop in properties.values() if isinstance(properties, dict) else ():
        # (a map of property schemas, or a schema of a property named `properties`)
        if isinstance(prop, dict) and prop.get("default", 0) is None and not _allows_null(prop):
            del prop["default"]
    for value in schema.values():
        _tighten(value)


def _allows_null(schema: dict[str, Any]) -> bool:
    if not schema or schema.get("type") == "null":
        return True
    if isinstance(schema.get("type"), list) and "null" in schema["type"]:
        return True
    return any(_allows_null(s) for s in schema.get("anyOf", []) + schema.get("oneOf", []))


def _deref(schemas: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    name = ref["$ref"].rsplit("/", 1)[-1]
    result: dict[str, Any] = schemas[name]
    return result


def _status_text(status: int, route: Route) -> str:
    return {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content"}.get(
        status, ERROR_TEXT.get(status, route.summary)
    )
