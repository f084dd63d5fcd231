"""The role each root Personalizer route needs (the key check names no model for them)."""

from __future__ import annotations

import pytest

from service.edge.app import root_refusal, root_role


@pytest.mark.parametrize(
    ("method", "path", "role"),
    [
        ("POST", "/personalizer/rank", "predict"),
        ("POST", "/personalizer/v1.0/rank", "predict"),
        ("POST", "/personalizer/v1.0/events/e1/reward", "predict"),
        ("POST", "/personalizer/events/e1/activate", "predict"),
        ("POST", "/personalizer/multislot/rank", "predict"),
        ("POST", "/personalizer/v1.1-preview.3/multislot/events/e1/reward", "predict"),
        ("GET", "/personalizer/configurations/service", "read"),
        ("GET", "/personalizer/v1.1-preview.3/model", "read"),
        ("PUT", "/personalizer/configurations/policy", "admin"),
        ("DELETE", "/personalizer/logs", "admin"),
        ("POST", "/personalizer/evaluations", "admin"),
        ("POST", "/personalizer/configurations/applyFromEvaluation", "admin"),
    ],
)
def test_each_root_route_needs_its_role(method: str, path: str, role: str) -> None:
    assert root_role(method, path) == role


def test_a_key_without_the_role_is_refused_naming_it() -> None:
    assert root_refusal(frozenset({"predict", "read"}), "admin") == (
        403, "this route needs a key with the admin role",
    )  # fmt: skip
    assert root_refusal(frozenset({"predict"}), "predict") is None
