"""The activity timeline: what happened in an org, newest first, read from what the store
already holds (the audit log, drift events, incidents, deliveries, git source runs).

`timeline` is the pure part (entries, kinds, the keyset cursor, the merge);
`controller.activity.service` reads the store. Nothing here writes, and nothing here knows
about pages or URLs."""
