"""The weekly summary e-mail: what a week of drift looked like for an org, sent once a week to
the recipients it opted in (see docs/portfolio.md, "The weekly summary e-mail").

- `schedule.py` (pure): the opt-in settings and when a week's e-mail is due;
- `compose.py` (pure): the figures, rendered as a text and an HTML part with unsubscribe headers;
- `smtp.py` (adapter): sending one message through the org's SMTP relay;
- `service.py`: the SMTP settings, the figures from the portfolio views, the `weekly_summary`
  job kind, the `email` delivery channel and the unsubscribe link.
"""
