"""The assessments a check runs on a fetched contract (`controller.checks.verdicts`): one
entry per capability that judges contracts against a watch's trust settings, each defined in
its own package."""

from __future__ import annotations

from controller.checks.verdicts import Assessments
from controller.toollock.assessor import TOOL_LOCK_ASSESSMENT

ASSESSMENTS = Assessments([TOOL_LOCK_ASSESSMENT])
