"""The cut of GitHub's REST description that the loopback GitHub uses is in the repository,
holds every operation and schema the fake uses, and is what the cut of the whole document
gives when that document is beside the clone."""

from __future__ import annotations

import pytest

from tests import github_description, github_fake
from tests.github_description import FIXTURE, SOURCE


def test_the_cut_holds_every_operation_and_schema_the_fake_uses() -> None:
    document = github_description.load()
    served = {(template, method.lower()) for _, method, template, _ in github_fake.ROUTES}
    assert served == set(github_description.OPERATIONS)
    for template, method in served:
        operation = document["paths"][template][method]
        assert operation["responses"], (template, method)
    assert set(github_description.COMPONENTS) <= set(document["components"]["schemas"])
    assert document["info"]["license"]["name"] == "MIT"
    # Every reference resolves inside the cut.
    for ref in github_description._refs(document):
        kind, name = ref.removeprefix("#/components/").split("/")[:2]
        assert name in document["components"][kind], ref


def test_an_answer_built_from_the_cut_is_valid_by_it() -> None:
    token = github_fake.example("#/components/schemas/installation-token", token="ghs_x")
    github_fake.validate("POST", "/app/installations/{installation_id}/access_tokens", "201", token)
    with pytest.raises(github_fake.jsonschema.ValidationError):
        github_fake.validate(
            "POST", "/repos/{owner}/{repo}/pulls", None, {"title": "no head nor base"}
        )


@pytest.mark.skipif(
    not SOURCE.exists(), reason=f"GitHub's whole REST description is not present at {SOURCE}"
)
def test_the_cut_is_what_the_whole_document_gives() -> None:
    import json

    whole = json.loads(SOURCE.read_text(encoding="utf-8"))
    assert FIXTURE.read_text(encoding="utf-8") == github_description.dump(
        github_description.cut(whole)
    ), "tests/fixtures/github is stale: run python -m tests.github_description --write"
