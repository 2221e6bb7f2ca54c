"""Signed agent cards (issue 45): an `a2a_card` watch names the keys it trusts, and each check
verifies the card's signatures against them (`verify.py`, pure) and records the verdict with
the snapshot (`assessor.py`, registered in `controller.checks.assessments`)."""
