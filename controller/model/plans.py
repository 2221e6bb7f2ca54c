"""The plans an org can be on, the overlay products a paid plan can enable, and what each plan
unlocks: one table (`FEATURES`, a feature and the lowest plan that has it) that every plan
check reads (`allows`), the console's plans page shows and docs/plans.md is generated from,
so that what is said and what is enforced cannot differ. Names only, no store: the CLI offers
the plans as choices without loading it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PLANS = ("free", "pro", "team", "enterprise")  # in order: a later plan is a higher one
PRODUCTS = ("replay_cloud", "draftpr_repo", "toolmanifest_org")
# The plan of an org created without one, unless the operator sets `default_plan`: a
# self-hosted server's orgs are its operator's own, so nothing is held back by default.
DEFAULT_PLAN = "enterprise"
# A trial session's sandbox org (only where trial sessions are switched on).
TRIAL_PLAN = "free"


@dataclass(frozen=True)
class Feature:
    """Something a plan unlocks: `minimum` and every higher plan have it."""

    name: str
    minimum: str
    what: str  # what it unlocks, in a sentence
    where: str  # the routes, commands and console views it gates (Markdown)
    below: str  # what a lower plan gets instead


FEATURES: Mapping[str, Feature] = {
    f.name: f
    for f in (
        Feature(
            "validate_api",
            "pro",
            "runtime ingress validation with an API key, metered by the plan's monthly quota",
            "`POST /api/validate`",
            "403 `plan_required` (a trial session validates on its own monthly allowance)",
        ),
        Feature(
            "coverage_assert",
            "pro",
            "coverage assertion: fail when a contract the repository depends on is not watched",
            "`POST /api/coverage/assert`, `driftgate coverage`",
            "403 `plan_required`",
        ),
        Feature(
            "a2a_coverage_assert",
            "pro",
            "the agents manifest's coverage assertion",
            "`POST /api/a2a/coverage/assert`",
            "403 `plan_required`",
        ),
        Feature(
            "overlay_products",
            "pro",
            "enabling the overlay products `replay_cloud`, `draftpr_repo` and "
            "`toolmanifest_org` (each is then switched on per org)",
            "`PUT /api/org/products/<product>`, `driftgate orgs enable-product`, the console's "
            "Settings",
            "403 `plan_required`; moving an org to such a plan switches its products off",
        ),
        Feature(
            "replay_install",
            "pro",
            "installing a catalog fixture without a watch (with `replay_cloud` on)",
            "`POST /v1/replay/fixtures/install` (and mockdrift's "
            "`POST /v1/mockdrift/fixtures/install`)",
            "403 `plan_required`",
        ),
        Feature(
            "live_ask",
            "pro",
            "Ask answers from the org's own data, with citations",
            "`POST /api/ask`, the console's Ask",
            "fixture answers through the API, none in the console",
        ),
    )
}


def plan_at_least(plan: str, minimum: str) -> bool:
    """True when `plan` is `minimum` or a higher plan ("Pro or higher" = pro, team, enterprise)."""
    return PLANS.index(plan) >= PLANS.index(minimum)


def minimum_plan(feature: str) -> str:
    """The lowest plan that has `feature` (KeyError for a name not in `FEATURES`)."""
    return FEATURES[feature].minimum


def allows(plan: str, feature: str) -> bool:
    """Whether an org on `plan` has `feature`: the one plan check (KeyError for a name not in
    `FEATURES`, so a check cannot name a feature the table does not list)."""
    return plan_at_least(plan, minimum_plan(feature))


def unlocked(plan: str) -> list[Feature]:
    """The features `plan` has, in the table's order."""
    return [f for f in FEATURES.values() if allows(plan, f.name)]


def render_markdown(quotas: Mapping[str, int]) -> str:
    """The table of docs/plans.md: per feature, each plan that has it, then the monthly
    validations of each plan (`quotas`: plan -> validations, 0 unlimited; the settings'
    defaults in the doc, the server's values on the console's page)."""
    head = "| feature | what it unlocks | where | " + " | ".join(PLANS) + " | below the plan |"
    rule = "|---|---|---|" + "---|" * len(PLANS) + "---|"
    rows = [head, rule]
    for f in FEATURES.values():
        marks = " | ".join("yes" if plan_at_least(p, f.minimum) else "no" for p in PLANS)
        rows.append(f"| `{f.name}` | {f.what} | {f.where} | {marks} | {f.below} |")
    quota = " | ".join(quota_text(p, quotas) for p in PLANS)
    rows.append(
        "| validations a month | `POST /api/validate` calls per org and calendar month (UTC); "
        f"beyond: 402 | settings `validate_quota_<plan>` | {quota} | |"
    )
    return "\n".join(rows) + "\n"


def quota_text(plan: str, quotas: Mapping[str, int]) -> str:
    if not allows(plan, "validate_api"):
        return "none"
    count = quotas.get(plan, 0)
    return "unlimited" if count == 0 else f"{count:,}"
