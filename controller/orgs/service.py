"""Organizations: plans, overlay products, and the admin operations on them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from controller.errors import Conflict, Forbidden, NotFound, ValidationFailed
from controller.model.hosted import product_name
from controller.model.plans import DEFAULT_PLAN, allows, minimum_plan
from controller.model.plans import PLANS as PLANS  # re-exported: other modules look here
from controller.model.plans import PRODUCTS as PRODUCTS
from controller.orgs.auth_service import forget_cached_keys
from controller.store import audit, ids
from controller.store.models import Org

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass(frozen=True)
class OrgView:
    id: str
    name: str
    plan: str
    products: tuple[str, ...]
    is_trial: bool
    created_at: datetime


def view(org: Org) -> OrgView:
    return OrgView(org.id, org.name, org.plan, tuple(org.products), org.is_trial, org.created_at)


def plan_required(org_name: str, plan: str, feature: str, what: str = "this call") -> Forbidden:
    """403 `plan_required` for `feature` (`controller.model.plans.FEATURES`): names the plan
    needed and the command that sets it."""
    minimum = minimum_plan(feature)
    return Forbidden(
        f"{what} needs the {minimum} plan or higher; org {org_name!r} is on the {plan} plan: "
        f"an operator sets it with `driftgate orgs set-plan {org_name} {minimum}`",
        code="plan_required",
    )


def product_required(org_name: str, plan: str, product: str) -> Forbidden:
    """403 `PRODUCT_REQUIRED: <product>` that names the ways to enable it (and, on the free
    plan, the plan to set first)."""
    enable = f"`driftgate orgs enable-product {org_name} {product}`"
    if not allows(plan, "overlay_products"):
        minimum = minimum_plan("overlay_products")
        how = (
            f"the {plan} plan cannot enable it: an operator sets {minimum} or higher first "
            f"(`driftgate orgs set-plan {org_name} {minimum}`), then runs {enable}"
        )
    else:
        how = (
            f"an operator enables it with {enable}, an org admin in the console (Settings, "
            f"Overlay products) or with PUT /api/org/products/{product}"
        )
    return Forbidden(
        f"the {product} product is not enabled for org {org_name!r}; {how}",
        code=f"PRODUCT_REQUIRED: {product}",
    )


def create_org(
    session: Session,
    name: str,
    plan: str | None = None,
    *,
    actor: str,
    default_plan: str = DEFAULT_PLAN,
) -> Org:
    """A new org on `plan`, else on the server's default plan (`default_plan`: the setting of
    that name, `enterprise` unless the operator chose another)."""
    plan = plan or default_plan
    if not _NAME.match(name):
        raise ValidationFailed(
            f"invalid org name {name!r}: use letters, digits, '.', '_' or '-' (at most 100)"
        )
    _check_plan(plan)
    if session.scalar(select(Org.id).where(Org.name == name)) is not None:
        raise Conflict(f"an org named {name!r} already exists", code="duplicate_name")
    org = Org(name=name, plan=plan, products=[])
    session.add(org)
    session.flush()
    audit.on_org(session, actor, org.id, "org.create", {"name": name, "plan": plan})
    return org


def get_org(session: Session, name_or_id: str) -> Org:
    """The org with this name or id, or whose id starts with it (`controller.model.ids`)."""
    org = session.scalar(select(Org).where((Org.name == name_or_id) | (Org.id == name_or_id)))
    if org is None:
        found = ids.by_prefix(session, Org.id, Org.name, name_or_id, kind="orgs")
        org = session.get(Org, found) if found else None
    if org is None:
        raise NotFound(f"no org named {name_or_id!r}")
    return org


def list_orgs(session: Session, *, trials: bool = False) -> list[Org]:
    """The orgs by name; the sandbox orgs of trial sessions only with `trials` (then last)."""
    query = select(Org).order_by(Org.is_trial, Org.name)
    if not trials:
        query = query.where(Org.is_trial.is_(False))
    return list(session.scalars(query))


def count_trial_orgs(session: Session) -> int:
    """How many sandbox orgs trial sessions made (`orgs list` says so when it leaves them out)."""
    return session.scalar(select(func.count()).select_from(Org).where(Org.is_trial)) or 0


def set_plan(session: Session, org: Org, plan: str, *, actor: str) -> Org:
    _check_plan(plan)
    previous = org.plan
    org.plan = plan
    forget_cached_keys(session)
    dropped: list[str] = []
    if not allows(plan, "overlay_products") and org.products:
        # Such an org cannot hold overlay products; downgrading switches them off.
        dropped, org.products = list(org.products), []
    audit.on_org(
        session,
        actor,
        org.id,
        "org.set_plan",
        {"from": previous, "to": plan, "productsDisabled": dropped},
    )
    return org


def set_product(session: Session, org: Org, product: str, enabled: bool, *, actor: str) -> Org:
    product = product_name(product)  # a hosted SKU's name reads as driftgate's
    if product not in PRODUCTS:
        raise ValidationFailed(f"unknown product {product!r} (one of: {', '.join(PRODUCTS)})")
    if enabled and not allows(org.plan, "overlay_products"):
        raise plan_required(org.name, org.plan, "overlay_products", f"enabling {product}")
    products = [p for p in org.products if p != product]
    if enabled:
        products.append(product)
    org.products = sorted(products)
    forget_cached_keys(session)
    audit.on_org(
        session,
        actor,
        org.id,
        "org.enable_product" if enabled else "org.disable_product",
        {"product": product},
    )
    return org


def _check_plan(plan: str) -> None:
    if plan not in PLANS:
        raise ValidationFailed(f"unknown plan {plan!r} (one of: {', '.join(PLANS)})")
