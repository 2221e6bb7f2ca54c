"""Draft pull requests through a GitHub App: when a contract drifts, open the pull request
that carries the fix (a changelog, the vendored contract) as a draft; when it is merged,
accept the new contract, resolve the incident and unblock the agents.

`changelog` is pure (branch names, the changelog file, stub numbers), `github` is the App
client (JWT, installation tokens, the few REST calls used), `service` holds the use cases the
shells call and the job kinds the controller runs. See docs/draft-prs.md.
"""
