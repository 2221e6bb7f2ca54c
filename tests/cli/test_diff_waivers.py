"""`driftgate diff --rules` with `waivers` (the entries of `.driftgate/waivers.yaml` without
`watch`) beside `overrides` and `ignore`: a waived finding is shown waived in every format
and does not count toward --fail-on; an expired waiver does not apply and is said on stderr."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import main
from tests.specs import charges_spec

RULES = """\
version: 1
overrides:
  - rule: response-property-enum-value-added
    severity: info
ignore:
  - rule: response-property-became-optional
    reason: "amount is always sent in practice"
waivers:
  - rule: endpoint-removed
    operation: "GET /v1/refunds"
    owner: payments-team@example.com
    reason: "we never call refunds (TICKET-123)"
    expires: {expires}
"""


def files(tmp_path: Path, expires: str) -> tuple[str, str, str]:
    base, revision, rules = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "rules.yaml"
    base.write_text(json.dumps(charges_spec()))
    revision.write_text(json.dumps(charges_spec(required=("id",), refunds=False)))
    rules.write_text(RULES.format(expires=expires))
    return str(base), str(revision), str(rules)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_waived_finding_is_shown_waived_and_does_not_fail(tmp_path: Path) -> None:
    base, revision, rules = files(tmp_path, "2027-03-31")
    common = ("diff", base, revision, "--rules", rules, "--today", "2026-12-07")
    text = run(*common)
    assert text.exit_code == 0, text.output
    assert "WAIVED   GET /v1/refunds" in text.stdout
    assert (
        "waived by payments-team@example.com until 2027-03-31: we never call refunds "
        "(TICKET-123)" in text.stdout
    )
    assert "expired" not in text.stderr
    answer = json.loads(run(*common, "--format", "json").stdout)
    [waived] = [c for c in answer["changes"] if c.get("waived")]
    assert waived["rule"] == "endpoint-removed" and waived["ignored"] is True
    assert waived["waiver"] == {
        "owner": "payments-team@example.com",
        "reason": "we never call refunds (TICKET-123)",
        "expires": "2027-03-31",
    }
    assert answer["failed"] is False and answer["counts"]["breaking"] == 0
    markdown = run(*common, "--format", "markdown").stdout
    assert "| waived | `GET /v1/refunds`" in markdown
    sarif = json.loads(run(*common, "--format", "sarif").stdout)
    suppressed = [r for r in sarif["runs"][0]["results"] if r.get("suppressions")]
    assert {r["ruleId"] for r in suppressed} == {
        "endpoint-removed",
        "response-property-became-optional",
    }
    junit = ET.fromstring(run(*common, "--format", "junit").stdout)
    skipped = [case.find("skipped") for case in junit.iter("testcase")]
    assert any(s is not None and s.get("message", "").startswith("waived by") for s in skipped)


def test_an_expired_waiver_does_not_apply_and_is_said_on_stderr(tmp_path: Path) -> None:
    base, revision, rules = files(tmp_path, "2026-12-07")
    result = run("diff", base, revision, "--rules", rules, "--today", "2026-12-07")
    assert result.exit_code == 1
    assert "BREAKING GET /v1/refunds" in result.stdout
    assert result.stderr.startswith(
        "driftgate: the waiver of endpoint-removed (GET /v1/refunds, owner "
        "payments-team@example.com) expired on 2026-12-07: its findings count again"
    )


def test_a_waiver_needs_an_expiry_and_takes_no_watch_here(tmp_path: Path) -> None:
    base, revision, rules = files(tmp_path, "2027-03-31")
    Path(rules).write_text(RULES.format(expires="2027-03-31") + "    watch: stripe-*\n")
    result = run("diff", base, revision, "--rules", rules)
    assert result.exit_code == 2
    assert "waivers/0/watch" in result.output
    Path(rules).write_text(RULES.replace("    expires: {expires}\n", ""))
    result = run("diff", base, revision, "--rules", rules)
    assert result.exit_code == 2
    assert "waivers/0/expires" in result.output
