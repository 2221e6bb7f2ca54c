"""The console's forms for an org's named destinations (admins): add one, change it, delete
it, through the same service calls as `/api/org/destinations`.

A form is drawn from the kind's registry entry (`ORG_DESTINATION_KINDS`): its settings and
secrets models name the fields, `digests` says whether a digest may be chosen. Secrets are
never shown back: a secret field is empty, beside its hint, and left empty on a change keeps
the stored one (as a replacement without `secrets` does). A refused form is drawn again with
the service's message beside it and nothing stored. The kind is picked before the form is
drawn (a GET form), so the page works without script.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from flask import current_app, redirect, request, url_for
from pydantic import BaseModel
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.destinations import service as destinations
from controller.errors import Conflict, Unprocessable, ValidationFailed
from controller.model.routing import DIGESTS
from web.body import validate
from web.console import action, admin, blueprint, now, page, signed_in
from web.db import request_session

SEVERITIES = ("breaking", "warning", "info")
LISTS = (("tags", "Tags"), ("watchSets", "Watch sets"), ("environments", "Environments"))


@dataclass(frozen=True)
class FieldView:
    """One setting or secret of a kind as the form draws it."""

    name: str  # the API's (camelCase) name
    input: Literal["checkbox", "select", "number", "text"]
    description: str
    required: bool
    default: Any
    choices: tuple[str, ...] = ()


@blueprint.get("/settings/destinations/new")
@signed_in
def new_destination(user: SignedIn) -> Response:
    admin(user)
    kind = _kind(request.args.get("kind"))
    return _form_page(user, None, kind, MultiDict())


@blueprint.post("/settings/destinations")
@signed_in
def create_destination(user: SignedIn) -> Response:
    """Add a destination from the form (the API's `POST /api/org/destinations`)."""
    admin(user)
    session = request_session()
    form = request.form
    kind = _kind(form.get("kind"))
    box = current_app.extensions["driftgate.secret_box"]
    try:
        body = validate(destinations.NamedDestinationIn, _body(form, kind), "form")
        destinations.create(session, user.principal(), body, box)
    except (ValidationFailed, Unprocessable, Conflict) as exc:
        session.rollback()
        return _form_page(user, None, kind, form, exc)
    session.commit()
    return _back()


@blueprint.get("/settings/destinations/<destination_id>")
@signed_in
def edit_destination(user: SignedIn, destination_id: str) -> Response:
    admin(user)
    found = destinations.get(request_session(), user.org_id, destination_id)
    kind = _kind(request.args.get("kind") or found.kind)
    return _form_page(user, found, kind, _filled(found))


@blueprint.post("/settings/destinations/<destination_id>")
@signed_in
def replace_destination(user: SignedIn, destination_id: str) -> Response:
    """Change a destination from the form (the API's `PUT`): secret fields left empty keep
    the stored secrets while the kind stays."""
    admin(user)
    session = request_session()
    found = destinations.get(session, user.org_id, destination_id)
    form = request.form
    kind = _kind(form.get("kind"))
    box = current_app.extensions["driftgate.secret_box"]
    try:
        body = validate(destinations.NamedDestinationIn, _body(form, kind), "form")
        destinations.replace(session, user.principal(), destination_id, body, box)
    except (ValidationFailed, Unprocessable, Conflict) as exc:
        session.rollback()
        return _form_page(user, found, kind, form, exc)
    session.commit()
    return _back()


@blueprint.post("/settings/destinations/<destination_id>/delete")
@action
def delete_destination(user: SignedIn, destination_id: str) -> str | Response:
    """Delete a destination once the form's box confirming it is ticked (the API's `DELETE`);
    its messages not sent yet give up."""
    session = request_session()
    if request.form.get("confirm") != "yes":
        found = destinations.get(session, user.org_id, destination_id)
        refused = Unprocessable(
            f"{found.name} was not deleted: tick the box to confirm", code="not_confirmed"
        )
        return _form_page(user, found, found.kind, _filled(found), refused, deleting=True)
    destinations.delete(session, user.principal(), destination_id, now())
    return _back()  # not back to the page posted from: that is the deleted one's


def kind_fields(kind: str) -> tuple[list[FieldView], list[FieldView]]:
    """The settings and the secrets of a kind, as form fields."""
    spec = destinations.kind_of(kind)
    return _fields(spec.settings), _fields(spec.secrets)


def _form_page(
    user: SignedIn,
    found: destinations.NamedDestinationOut | None,
    kind: str,
    form: MultiDict[str, str],
    error: ValidationFailed | Unprocessable | Conflict | None = None,
    deleting: bool = False,
) -> Response:
    settings, secrets = kind_fields(kind)
    spec = destinations.kind_of(kind)
    problems: dict[str, str] = {}
    if error is not None and isinstance(error.details, list):
        for detail in error.details:
            if isinstance(detail, dict) and detail.get("path"):
                problems[_field_of(str(detail["path"]))] = str(detail.get("message", ""))
    return page(
        "destination.html",
        user,
        code=error.status if error is not None else 200,
        found=found,
        kind=kind,
        kinds=destinations.kinds(),
        settings_fields=settings,
        secret_fields=secrets,
        # A secret is kept only while the kind stays (the service's rule): say so.
        keeps_secrets=found is not None and found.kind == kind,
        events=destinations.events_of(kind),
        severities=SEVERITIES,
        lists=LISTS,
        digests=DIGESTS if spec.digests else ("off",),
        form=form,
        error=error.message if error is not None and not deleting else None,
        delete_error=error.message if error is not None and deleting else None,
        problems=problems,
    )


def _body(form: MultiDict[str, str], kind: str) -> dict[str, Any]:
    """The API's body from the form: empty settings take the kind's defaults, empty secrets
    are left out (kept on a change), lists are one value per line or comma. The kind is the
    one posted, so that the service refuses an unknown one by name."""
    settings_fields, secret_fields = kind_fields(kind)
    body: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "kind": form.get("kind", ""),
        "enabled": bool(form.get("enabled")),
        "settings": {},
        "routing": {
            "events": form.getlist("events"),
            "severities": form.getlist("severities"),
            **{key: _lines(form.get(key, "")) for key, _label in LISTS},
        },
        "digest": form.get("digest", "off"),
    }
    for field in settings_fields:
        value = form.get(f"settings.{field.name}", "")
        if field.input == "checkbox":
            body["settings"][field.name] = bool(value)
        elif value.strip():
            number = field.input == "number"
            body["settings"][field.name] = _number(value) if number else value.strip()
    secrets = {
        f.name: form[f"secrets.{f.name}"] for f in secret_fields if form.get(f"secrets.{f.name}")
    }
    if secrets:
        body["secrets"] = secrets
    group = form.get("groupSeconds", "").strip()
    body["groupSeconds"] = _number(group) if group else None
    return body


def _filled(found: destinations.NamedDestinationOut) -> MultiDict[str, str]:
    """A stored destination as the form's values (never its secrets)."""
    values: list[tuple[str, str]] = [("name", found.name), ("digest", found.digest)]
    if found.enabled:
        values.append(("enabled", "1"))
    for key, value in found.settings.items():
        if value is not False:
            values.append((f"settings.{key}", "1" if value is True else str(value)))
    routing = found.routing
    values += [("events", e) for e in routing.events]
    values += [("severities", s) for s in routing.severities]
    values += [
        ("tags", "\n".join(routing.tags)),
        ("watchSets", "\n".join(routing.watch_sets)),
        ("environments", "\n".join(routing.environments)),
    ]
    if found.group_seconds is not None:
        values.append(("groupSeconds", str(found.group_seconds)))
    return MultiDict(values)


def _fields(model: type[BaseModel]) -> list[FieldView]:
    views = []
    for key, info in model.model_fields.items():
        annotation = _unoptional(info.annotation)
        choices: tuple[str, ...] = ()
        shape: Literal["checkbox", "select", "number", "text"] = "text"
        if annotation is bool:
            shape = "checkbox"
        elif get_origin(annotation) is Literal:
            shape, choices = "select", tuple(str(c) for c in get_args(annotation))
        elif annotation is int:
            shape = "number"
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        views.append(
            FieldView(
                name=info.alias or key,
                input=shape,
                description=info.description or "",
                required=info.is_required(),
                default=default,
                choices=choices,
            )
        )
    return views


def _unoptional(annotation: Any) -> Any:
    """`X | None` as `X`: the form's field is the value's."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [a for a in get_args(annotation) if a is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _field_of(path: str) -> str:
    """A JSON pointer of the body (`/settings/url`, `/routing/tags/0`) as the form field it
    came from (`settings.url`, `tags`)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] in ("settings", "secrets"):
        return f"{parts[0]}.{parts[1]}"
    if len(parts) >= 2 and parts[0] == "routing":
        return parts[1]
    return parts[0] if parts else "form"


def _kind(value: str | None) -> str:
    """The kind asked for; an unknown one falls back to the first so the page draws, and the
    service refuses it by name if it is posted."""
    kinds = destinations.kinds()
    return value if value in kinds else kinds[0]


def _lines(text: str) -> list[str]:
    return [part.strip() for part in text.replace(",", "\n").splitlines() if part.strip()]


def _number(text: str) -> int | str:
    """A number as an integer; anything else as typed, so the model refuses it by name."""
    text = text.strip()
    return int(text) if text.isdigit() else text


def _back() -> Response:
    """After a change: the settings page's table, which shows it (and its health)."""
    return redirect(url_for("console.settings", _anchor="destinations"))
