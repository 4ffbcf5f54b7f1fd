"""What an operator may configure: YAML policies and their schema.

`load_policy(path)` reads and validates a policy file (the shipped default when no path is
given); a broken file raises `PolicyError` with one plain line per problem.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from policies.model import ActionRule, MutationAction, MutationPolicy, Policy

__all__ = [
    "DEFAULT_POLICY",
    "SCHEMA_PATH",
    "ActionRule",
    "MutationAction",
    "MutationPolicy",
    "Policy",
    "PolicyError",
    "load_policy",
]

DEFAULT_POLICY = Path(__file__).with_name("default.yaml")
SCHEMA_PATH = Path(__file__).with_name("policy.schema.json")


class PolicyError(ValueError):
    """The policy file is missing or invalid; the message says where and what."""


def load_policy(path: Path | None = None) -> Policy:
    where = path or DEFAULT_POLICY
    try:
        raw = yaml.safe_load(where.read_text())
    except OSError as e:
        msg = f"cannot read policy file {where}: {e.strerror or e}"
        raise PolicyError(msg) from e
    except yaml.YAMLError as e:
        msg = f"policy file {where} is not valid YAML: {e}"
        raise PolicyError(msg) from e
    try:
        return Policy.model_validate(raw or {})
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in e.errors()
        )
        msg = f"policy file {where} is invalid: {problems}"
        raise PolicyError(msg) from e
