"""The driftStatus state machine: every row of CONTRACT.md's table, its edge rules, and what the
code did beyond the table before the machine moved into controller/watches/status.py."""

from __future__ import annotations

from typing import Any

import pytest

from controller.watches.status import (
    INITIAL,
    BaselineAccepted,
    CheckFailed,
    CheckSucceeded,
    Counts,
    DriftStatus,
    Event,
    Paused,
    Resumed,
    StatusFacts,
    facts_of,
    transition,
)

OK, DRIFTED, ERROR, NEVER_RUN, DISABLED = (
    DriftStatus.OK,
    DriftStatus.DRIFTED,
    DriftStatus.ERROR,
    DriftStatus.NEVER_RUN,
    DriftStatus.DISABLED,
)
ALL = list(DriftStatus)
NOTHING = Counts()
BREAKING = Counts(breaking=2, warning=1, info=3)
WARNING = Counts(warning=1, info=2)
INFO = Counts(info=4)


def facts(status: DriftStatus, **kw: Any) -> StatusFacts:
    return StatusFacts(status=status, **{"has_baseline": True, **kw})


# (id, facts, event, expected status, expected consequences)
ROWS: list[tuple[str, StatusFacts, Event, DriftStatus, dict[str, Any]]] = [
    # never_run | first successful check (becomes the baseline) | ok
    (
        "never_run-first_good_check",
        facts(NEVER_RUN, has_baseline=False),
        CheckSucceeded(NOTHING),
        OK,
        {"row": "first_good_check", "advance_baseline": "first-check", "open_changes": None},
    ),
    # ok | breaking changes | drifted (opens an incident)
    (
        "ok-breaking",
        facts(OK),
        CheckSucceeded(BREAKING),
        DRIFTED,
        {
            "row": "breaking",
            "open_incident": True,
            "notify_agents": True,
            "open_changes": BREAKING,
            "announce_drift": "breaking",
            "resolve_incident": None,
            "advance_baseline": None,
        },
    ),
    # ok | only warning/info | ok (drift event; info-only advances the baseline)
    (
        "ok-warning",
        facts(OK),
        CheckSucceeded(WARNING),
        OK,
        {
            "row": "warning_info_only",
            "open_incident": False,
            "open_changes": Counts(0, 1, 2),
            "advance_baseline": None,
            "announce_drift": "warning",
            "announce_cleared": False,
        },
    ),
    (
        "ok-info-only",
        facts(OK),
        CheckSucceeded(INFO),
        OK,
        {
            "row": "warning_info_only",
            "open_changes": NOTHING,
            "advance_baseline": "auto:info-only",
            "announce_drift": None,
        },
    ),
    # ok | only waived breaking changes (and info) | ok, no incident, the baseline kept
    (
        "ok-waived-only",
        facts(OK),
        CheckSucceeded(Counts(0, 0, 2, waived=1)),
        OK,
        {
            "row": "warning_info_only",
            "open_incident": False,
            "open_changes": Counts(0, 0, 2),
            "advance_baseline": None,
            "announce_drift": None,
        },
    ),
    # drifted | every breaking change now waived | ok, the incident resolved (reverted)
    (
        "drifted-waived",
        facts(DRIFTED, open_breaking=1),
        CheckSucceeded(Counts(0, 0, 0, waived=1)),
        OK,
        {
            "row": "breaking_gone",
            "resolve_incident": "reverted",
            "advance_baseline": None,
            "announce_cleared": True,
        },
    ),
    (
        "ok-no-semantic-change",
        facts(OK),
        CheckSucceeded(NOTHING),
        OK,
        {"advance_baseline": "auto:info-only", "open_changes": NOTHING, "announce_drift": None},
    ),
    # drifted | breaking changes disappear | ok (incident resolved: reverted)
    (
        "drifted-breaking_gone",
        facts(DRIFTED, open_breaking=2),
        CheckSucceeded(NOTHING),
        OK,
        {
            "row": "breaking_gone",
            "resolve_incident": "reverted",
            "announce_cleared": True,
            "advance_baseline": "auto:info-only",
            "open_changes": NOTHING,
        },
    ),
    # Flap damping: back at the baseline (by fingerprint, or a restored one): a revert that
    # leaves the baseline's acceptance as it is.
    (
        "drifted-back_at_baseline",
        facts(DRIFTED, open_breaking=2),
        CheckSucceeded(NOTHING, at_baseline=True),
        OK,
        {
            "row": "breaking_gone",
            "resolve_incident": "reverted",
            "announce_cleared": True,
            "advance_baseline": None,
            "open_changes": NOTHING,
            "announce_drift": None,
        },
    ),
    (
        "ok-back_at_baseline",
        facts(OK, open_breaking=0),
        CheckSucceeded(NOTHING, at_baseline=True),
        OK,
        {
            "row": "back_at_baseline",
            "resolve_incident": "reverted",
            "announce_cleared": False,
            "advance_baseline": None,
            "open_changes": NOTHING,
        },
    ),
    (
        "error-back_at_baseline",
        facts(ERROR, open_breaking=2),
        CheckSucceeded(NOTHING, at_baseline=True),
        OK,
        {"row": "back_at_baseline", "resolve_incident": "reverted", "announce_cleared": False},
    ),
    (
        "disabled-back_at_baseline",
        facts(DISABLED, open_breaking=2),
        CheckSucceeded(NOTHING, at_baseline=True),
        DISABLED,
        {"resolve_incident": "reverted", "announce_cleared": False, "advance_baseline": None},
    ),
    (
        "drifted-breaking_gone-warning_left",
        facts(DRIFTED, open_breaking=2),
        CheckSucceeded(WARNING),
        OK,
        {
            "row": "breaking_gone",
            "resolve_incident": "reverted",
            "announce_cleared": True,
            "advance_baseline": None,
            "open_changes": Counts(0, 1, 2),
            "announce_drift": "warning",
        },
    ),
    (
        "drifted-still_breaking",
        facts(DRIFTED, open_breaking=2),
        CheckSucceeded(BREAKING),
        DRIFTED,
        {"row": "breaking", "open_incident": True, "open_changes": BREAKING},
    ),
    # drifted | new baseline accepted | ok (incident resolved)
    (
        "drifted-baseline_accepted",
        facts(DRIFTED, open_breaking=2),
        BaselineAccepted(),
        OK,
        {
            "row": "baseline_accepted",
            "resolve_incident": "baseline_accepted",
            "open_changes": NOTHING,
        },
    ),
    # any but disabled | fetch or parse fails | error (reason check_failed:<failureClass>)
    *[
        (
            f"{status}-check_failed",
            facts(status),
            CheckFailed("timeout"),
            ERROR,
            {
                "row": "check_failed",
                "reason": "check_failed:timeout",
                "announce_failure": status != ERROR,
                "advance_baseline": None,
                "open_incident": False,
                "resolve_incident": None,
            },
        )
        for status in (OK, DRIFTED, ERROR, NEVER_RUN)
    ],
    # error | next successful check | ok or drifted by the diff against the baseline
    (
        "error-good_check-clean",
        facts(ERROR),
        CheckSucceeded(INFO),
        OK,
        {"row": "warning_info_only", "advance_baseline": "auto:info-only"},
    ),
    (
        "error-good_check-breaking",
        facts(ERROR),
        CheckSucceeded(BREAKING),
        DRIFTED,
        {"row": "breaking", "open_incident": True, "notify_agents": True},
    ),
    # any | paused | disabled
    *[
        (f"{status}-paused", facts(status), Paused(), DISABLED, {"row": "paused"})
        for status in (OK, DRIFTED, ERROR, NEVER_RUN)
    ],
    ("disabled-paused", facts(DISABLED), Paused(), DISABLED, {"row": "no_op"}),
    # resuming recomputes the status
    (
        "resumed-ok",
        facts(DISABLED, last_check_status="ok"),
        Resumed(),
        OK,
        {"row": "resumed"},
    ),
    (
        "resumed-drifted",
        facts(DISABLED, last_check_status="ok", open_breaking=3),
        Resumed(),
        DRIFTED,
        {"row": "resumed"},
    ),
    (
        "resumed-error",
        facts(DISABLED, last_check_status="error", open_breaking=3),
        Resumed(),
        ERROR,
        {"row": "resumed"},
    ),
    (
        "resumed-never_run",
        facts(DISABLED, has_baseline=False, last_check_status=None),
        Resumed(),
        NEVER_RUN,
        {"row": "resumed"},
    ),
    *[
        (f"{status}-resumed", facts(status), Resumed(), status, {"row": "no_op"})
        for status in (OK, DRIFTED, ERROR, NEVER_RUN)
    ],
    # Edge: a watch with no completed check stays never_run (resuming one, above) ...
    (
        "never_run-unchanged",
        facts(NEVER_RUN, has_baseline=False),
        CheckSucceeded(None),
        NEVER_RUN,
        {"row": "unchanged"},
    ),
    # ... and an error on a watch that never had a good check stays error.
    (
        "never_run-failed-no_baseline",
        facts(NEVER_RUN, has_baseline=False),
        CheckFailed("connect_error"),
        ERROR,
        {"reason": "check_failed:connect_error", "announce_failure": True},
    ),
    (
        "error-failed-again-no_baseline",
        facts(ERROR, has_baseline=False, last_check_status="error"),
        CheckFailed("tls_error"),
        ERROR,
        {"reason": "check_failed:tls_error", "announce_failure": False},
    ),
    (
        "error-first_good_check",
        facts(ERROR, has_baseline=False, last_check_status="error"),
        CheckSucceeded(NOTHING),
        OK,
        {"row": "first_good_check", "advance_baseline": "first-check"},
    ),
    # Beyond the table, as the code did: the same contract again after an error.
    (
        "error-unchanged-clean",
        facts(ERROR, open_breaking=0),
        CheckSucceeded(None),
        OK,
        {"row": "error_recovered", "advance_baseline": None, "open_changes": None},
    ),
    (
        "error-unchanged-breaking",
        facts(ERROR, open_breaking=1),
        CheckSucceeded(None),
        DRIFTED,
        {"row": "error_recovered", "open_incident": False},
    ),
    (
        "error-unchanged-no_baseline",
        facts(ERROR, has_baseline=False),
        CheckSucceeded(None),
        NEVER_RUN,
        {"row": "error_recovered"},
    ),
    *[
        (f"{status}-unchanged", facts(status), CheckSucceeded(None), status, {"row": "unchanged"})
        for status in (OK, DRIFTED, DISABLED)
    ],
    # Beyond the table: a check that lands on a watch paused while it fetched.
    (
        "disabled-failed",
        facts(DISABLED),
        CheckFailed("http_error"),
        DISABLED,
        {"announce_failure": False, "reason": "check_failed:http_error"},
    ),
    (
        "disabled-first_good_check",
        facts(DISABLED, has_baseline=False),
        CheckSucceeded(NOTHING),
        DISABLED,
        {"row": "first_good_check", "advance_baseline": "first-check"},
    ),
    (
        "disabled-breaking",
        facts(DISABLED),
        CheckSucceeded(BREAKING),
        DISABLED,
        {"open_incident": True, "notify_agents": False, "announce_drift": "breaking"},
    ),
    (
        "disabled-clean",
        facts(DISABLED),
        CheckSucceeded(INFO),
        DISABLED,
        {"resolve_incident": "reverted", "announce_cleared": False},
    ),
    # Beyond the table: accepting a baseline moves never_run to ok; error and disabled stay.
    ("never_run-baseline_accepted", facts(NEVER_RUN), BaselineAccepted(), OK, {}),
    ("ok-baseline_accepted", facts(OK), BaselineAccepted(), OK, {}),
    (
        "error-baseline_accepted",
        facts(ERROR),
        BaselineAccepted(),
        ERROR,
        {"resolve_incident": "baseline_accepted", "open_changes": NOTHING},
    ),
    (
        "disabled-baseline_accepted",
        facts(DISABLED),
        BaselineAccepted(),
        DISABLED,
        {"resolve_incident": "baseline_accepted"},
    ),
]


@pytest.mark.parametrize(
    ("current", "event", "expected", "consequences"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_transition(
    current: StatusFacts, event: Event, expected: DriftStatus, consequences: dict[str, Any]
) -> None:
    decided = transition(current, event)
    assert decided.before == current.status
    assert decided.status == expected
    assert decided.changed == (expected != current.status)
    for name, value in consequences.items():
        assert getattr(decided, name) == value, name


def test_the_ids_are_unique() -> None:
    ids = [row[0] for row in ROWS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("status", ALL)
def test_every_state_answers_every_event(status: DriftStatus) -> None:
    events: list[Event] = [
        CheckSucceeded(None),
        CheckSucceeded(NOTHING),
        CheckSucceeded(BREAKING),
        CheckFailed("timeout"),
        BaselineAccepted(),
        Paused(),
        Resumed(),
    ]
    for event in events:
        for has_baseline in (True, False):
            decided = transition(facts(status, has_baseline=has_baseline), event)
            assert decided.status in ALL


@pytest.mark.parametrize("status", ALL)
def test_only_a_check_with_breaking_changes_opens_an_incident(status: DriftStatus) -> None:
    for event in (CheckSucceeded(None), CheckSucceeded(WARNING), CheckFailed("timeout")):
        assert not transition(facts(status), event).open_incident
    assert transition(facts(status), CheckSucceeded(BREAKING)).open_incident


def test_the_healthy_unchanged_statement_skips_only_no_ops() -> None:
    # checks.py updates ok/drifted watches whose contract did not change in one statement
    # without asking the machine: for them the machine changes nothing.
    for status in (OK, DRIFTED):
        for breaking in (0, 2):
            decided = transition(facts(status, open_breaking=breaking), CheckSucceeded(None))
            assert not decided.changed
            assert decided == type(decided)(before=status, status=status, row="unchanged")


def test_a_new_watch_starts_never_run() -> None:
    assert INITIAL == NEVER_RUN


def test_an_unknown_event_is_refused() -> None:
    with pytest.raises(TypeError):
        transition(facts(OK), object())  # type: ignore[arg-type]


def test_facts_of_reads_a_stored_watch() -> None:
    class Row:
        drift_status = "drifted"
        baseline_snapshot_id: str | None = "snap-1"
        open_breaking = 2
        last_check_status: str | None = "ok"

    assert facts_of(Row()) == StatusFacts(DRIFTED, True, 2, "ok")
    Row.baseline_snapshot_id = None
    assert not facts_of(Row()).has_baseline
