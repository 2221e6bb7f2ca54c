"""A watch's contract in the console: the operations (OpenAPI), tools (MCP) or skills (A2A
agent card) of its last snapshot and of its baseline, browsable, with the added, removed and
changed ones marked (`controller.watches.view_service`); a kind with nothing to list (a REST
sample) says so (`ContractKind.noun`)."""

from __future__ import annotations

from flask import request
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.contracts.kinds import CONTRACT_KINDS
from controller.errors import ValidationFailed
from controller.watches.view_service import MARKS, Marked, contract_view
from web.console import blueprint, now, page, signed_in
from web.db import request_session


@blueprint.get("/watches/<watch_id>/contract")
@signed_in
def contract(user: SignedIn, watch_id: str) -> Response:
    shown = request.args.get("show", "all")
    if shown not in ("all", *MARKS[:3]):
        raise ValidationFailed(f"show {shown[:40]!r} is not all, added, removed or changed")
    needle = request.args.get("q", "").strip().lower()[:200]
    found = contract_view(request_session(), user.org_id, watch_id, now())

    def keep(items: list[Marked]) -> list[Marked]:
        return [
            m
            for m in items
            if (shown == "all" or m.mark == shown)
            and (not needle or needle in m.name.lower() or needle in m.summary.lower())
        ]

    return page(
        "contract.html",
        user,
        found=found,
        current=keep(found.view.current),
        baseline=keep(found.view.baseline),
        counts=found.view.counts,
        shown=shown,
        needle=needle,
        # What the contract is made of (operations, tools, skills); none for a sample.
        noun=CONTRACT_KINDS.of(found.watch.watch_type).noun,
    )
