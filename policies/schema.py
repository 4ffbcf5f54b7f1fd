"""Write policy.schema.json from the models: `python -m policies.schema`.

The schema is for editors and for Helm's values check; the models are the source of truth, and
a test fails when the committed schema no longer matches them.
"""

from __future__ import annotations

import json
import sys

from policies import SCHEMA_PATH
from policies.model import Policy


def schema_text() -> str:
    schema = Policy.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Triage policy"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> None:
    SCHEMA_PATH.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")


if __name__ == "__main__":
    main()
