"""deploy/systemd/: each unit passes `systemd-analyze verify` (its directives parse, its command
is executable) with no warning, runs a real driftgate command from the venv the docs install
to, reads its settings from the environment file, and may write only its data directory."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
VENV_COMMAND = "/opt/driftgate/bin/driftgate"
# The command of this test run's environment: what the venv in /opt/driftgate would hold.
DRIFTGATE = Path(sys.executable).parent / "driftgate"


def service(unit: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(unit.read_text(encoding="utf-8"))
    return parser["Service"]


def test_there_are_units() -> None:
    assert [u.name for u in UNITS] == ["driftgate-controller.service", "driftgate.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_the_unit_runs_a_driftgate_command_confined_to_its_data(unit: Path) -> None:
    section = service(unit)
    program, *words = section["ExecStart"].split()
    assert program == VENV_COMMAND
    result = CliRunner().invoke(main, [*words, "--help"])
    assert result.exit_code == 0, (words, result.output)
    assert section["EnvironmentFile"] == "/etc/driftgate/driftgate.env"
    data = section["Environment"].removeprefix("DRIFTGATE_DATA_DIR=")
    assert data == f"/var/lib/{section['StateDirectory']}" == section["ReadWritePaths"]
    assert section["ProtectSystem"] == "strict" and section["NoNewPrivileges"] == "yes"
    assert section["User"] == "driftgate" and section["CapabilityBoundingSet"] == ""


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_systemd_analyze_verifies_the_unit(unit: Path, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package)")
    assert DRIFTGATE.is_file()
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace(VENV_COMMAND, str(DRIFTGATE)))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
    # A mistake is seen: verify warns of a value it cannot parse.
    broken = tmp_path / "broken" / unit.name
    broken.parent.mkdir()
    broken.write_text(copy.read_text().replace("ProtectSystem=strict", "ProtectSystem=strictly"))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(broken)], capture_output=True, text=True, timeout=60
    )
    assert "strictly" in done.stdout + done.stderr
