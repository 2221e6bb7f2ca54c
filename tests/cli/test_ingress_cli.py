"""`driftgate check-payload` offline and `driftgate profiles` against a live server."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import main
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import WsgiServer

PROFILE_YAML = """\
id: order
version: 1
requiredPolicy: schemaOnly
schema:
  type: object
  properties:
    email: {type: string}
    qty: {type: integer, minimum: 1}
  required: [email]
"""


def check(tmp_path: Path, payload: object, *args: str, profile: str = PROFILE_YAML) -> Result:
    (tmp_path / "payload.json").write_text(json.dumps(payload))
    (tmp_path / "profile.yaml").write_text(profile)
    argv = [
        "check-payload",
        str(tmp_path / "payload.json"),
        "--profile",
        str(tmp_path / "profile.yaml"),
        *args,
    ]
    return CliRunner().invoke(main, argv, env={"DRIFTGATE_CONFIG": None})


def test_check_payload_exit_codes_and_output(tmp_path: Path) -> None:
    fits = check(tmp_path, {"email": "a@b.c", "qty": 1})
    assert fits.exit_code == 0 and fits.output == "ok: the payload fits the profile\n"
    broken = check(tmp_path, {"qty": 0, "x": 1})
    assert broken.exit_code == 1
    assert broken.output.splitlines() == [
        "invalid (breaking): 3 error(s)",
        "  /email: a required property is missing (required_missing)",
        "  /qty: 0 is below the minimum 1 (min_value)",
        "  /x: the consumer does not accept this property (extra_field)",
    ]
    assert check(tmp_path, {"qty": 0}, "--mode", "warn").exit_code == 0
    as_json = json.loads(check(tmp_path, {"qty": 1}, "--format", "json").output)
    assert as_json["ok"] is False and as_json["errors"][0]["code"] == "required_missing"
    strict = check(
        tmp_path,
        {"email": "a"},
        "--profile-mode",
        "cli",
        profile=PROFILE_YAML.replace("requiredPolicy: schemaOnly\n", ""),
    )
    assert strict.exit_code == 1 and "/qty: a required property is missing" in strict.output


def test_check_payload_bad_input_is_exit_2(tmp_path: Path) -> None:
    unusable = check(tmp_path, {}, profile="id: order\nversion: 0\nschema: {}\n")
    assert unusable.exit_code == 2 and "profile_invalid" in unusable.stderr
    (tmp_path / "payload.json").write_text("{not json")
    argv = [
        "check-payload",
        str(tmp_path / "payload.json"),
        "--profile",
        str(tmp_path / "profile.yaml"),
    ]
    assert CliRunner().invoke(main, argv).exit_code == 2
    missing = CliRunner().invoke(main, ["check-payload", "nope.json", "--profile", "nope.yaml"])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_profiles_push_list_delete(
    api_server: WsgiServer,
    acme: OrgKey,
    tmp_path: Path,
) -> None:
    path = tmp_path / "order.yaml"
    path.write_text(PROFILE_YAML)
    pushed = cli(api_server.url, acme.key, "profiles", "push", str(path))
    assert pushed.exit_code == 0 and pushed.output == "stored profile order version 1\n"
    listed = cli(api_server.url, acme.key, "profiles", "list").output.splitlines()
    assert listed[0].split() == ["ID", "VERSION", "SOURCE", "UPDATED"] and listed[1].split()[
        :3
    ] == ["order", "1", "-"]
    path.write_text(PROFILE_YAML.replace("minimum: 1", "minimum: 2"))
    conflict = cli(api_server.url, acme.key, "profiles", "push", str(path))
    assert conflict.exit_code == 2 and "version_conflict" in conflict.stderr
    assert cli(api_server.url, acme.key, "profiles", "delete", "order").exit_code == 0
    assert cli(
        api_server.url, acme.key, "profiles", "list", "--format", "json"
    ).output.strip() == json.dumps({"profiles": []}, indent=2)
