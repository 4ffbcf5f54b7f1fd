"""An image the registry no longer has is explained by the node cache only when no release
brought it: the rollout history says so, and the pod's age or the user's words back it. The
words are read for "nothing was deployed" and "the nodes were replaced" in everyday shapes,
and not for a release the user made."""

from __future__ import annotations

import pytest

from triage.agent.planners.rules.analyzers.references import _NOT_DEPLOYED


@pytest.mark.parametrize(
    "words",
    [
        "nobody deployed anything to it, what happened?",
        "we didn't change cart-redis in months",
        "nothing was released today but it's down",
        "it broke after the node pool upgrade last night",
        "since they drained the old nodes it's in ImagePullBackOff",
        "after we replaced the nodes with the new AMI",
        "haven't touched this service since March",
    ],
)
def test_no_release_or_replaced_nodes_are_read(words: str) -> None:
    assert _NOT_DEPLOYED.search(words)


@pytest.mark.parametrize(
    "words",
    [
        "we deployed payments 2.3.9 and the pods never start",
        "after the release at 10:00 the new pods are stuck in ImagePullBackOff",
        "checkout-api is down, can you look?",
        "the image pull fails for the new tag",
    ],
)
def test_a_release_or_a_plain_question_is_not(words: str) -> None:
    assert not _NOT_DEPLOYED.search(words)
