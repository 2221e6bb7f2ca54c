"""The assessments a check runs on a fetched contract (`controller.checks.verdicts`): one
entry per capability that judges contracts against a watch's trust settings, each defined in
its own package (which imports nothing of the checks: the entry is made here)."""

from __future__ import annotations

from controller.cardtrust import assessor as card_signature
from controller.checks.verdicts import Assessment, Assessments
from controller.diffs.a2a import CARD_SIGNATURE
from controller.diffs.toollock import TOOL_LOCK
from controller.toollock import assessor as tool_lock

ASSESSMENTS = Assessments(
    [
        Assessment(TOOL_LOCK, tool_lock.build),
        # A card's signatures are read from the card as sent: the contract leaves them out.
        Assessment(CARD_SIGNATURE, card_signature.build, reads_as_sent=True),
    ]
)
