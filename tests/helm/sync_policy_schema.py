"""Copy the policy schema into the chart's values schema: `python -m tests.helm.sync_policy_schema`.

values.schema.json checks `policy:` with the policy file's own schema (policies/policy.schema.json,
generated from policies/model.py), hoisted into its `$defs` (`Policy` plus the policy's own
definitions, whose `#/$defs/...` references then resolve unchanged). Run this after the policy
schema changes; tests/helm/test_chart_lints_and_renders.py fails until the two agree.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from policies import SCHEMA_PATH
from tests.helm.support import CHART

VALUES_SCHEMA = CHART / "values.schema.json"


def embedded(values_schema: dict[str, Any]) -> dict[str, Any]:
    """`values_schema` with its policy definitions replaced by the policy schema's."""
    policy = json.loads(SCHEMA_PATH.read_text())
    defs = {k: v for k, v in values_schema.get("$defs", {}).items() if k not in policy["$defs"]}
    defs["Policy"] = {k: v for k, v in policy.items() if k not in ("$defs", "$schema")}
    defs.update(policy["$defs"])
    return {**values_schema, "$defs": defs}


def main() -> None:
    current = json.loads(VALUES_SCHEMA.read_text())
    VALUES_SCHEMA.write_text(json.dumps(embedded(current), indent=2) + "\n")
    sys.stdout.write(f"wrote {VALUES_SCHEMA}\n")


if __name__ == "__main__":
    main()
