"""Write the JSON Schema of a release spec (``release.yaml``), generated from its models.

    python schema/generate.py > schema/release.schema.json

The schema is the root model's ``model_json_schema()``, completed where the model reads more
than its annotations say: ``quasi_identifiers`` also takes mappings (:class:`KeyDeclaration`),
``method`` is one of the registered methods' parameter models (the root model annotates their
common base), and ``checks`` takes the keys of the gate registry, each threshold within its
figure's range. Fields the model excludes (set by the loader, not written in a spec) are left
out. Editors that speak the YAML language server validate a spec against it with a first line
``# yaml-language-server: $schema=<path or URL of release.schema.json>``.

``tests/test_spec_schema.py`` checks that the committed file equals what this prints, so the
schema cannot go stale when a model changes: re-run the command above and commit the result.
"""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any

SCHEMA_ID = "release.schema.json"


def spec_models() -> ModuleType:
    """The module holding ``ReleaseSpec`` and ``KeyDeclaration``."""
    return importlib.import_module("sdcflow.spec.schema")


def method_registry() -> dict[str, Any]:
    """``METHODS``: method name -> its entry, whose ``params`` is the parameter model."""
    return importlib.import_module("sdcflow.methods").METHODS


def gate_registry() -> dict[str, Any]:
    """``GATES``: check key -> its gate (``upper``: the top of its figure's range)."""
    return importlib.import_module("sdcflow.gates").GATES


def _lift_defs(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Move a sub-schema's ``$defs`` into the root's; the same name must mean the same model."""
    for name, definition in schema.pop("$defs", {}).items():
        if defs.setdefault(name, definition) != definition:
            raise ValueError(f"two different models are both named {name} in the schema")
    return schema


def release_schema() -> dict[str, Any]:
    """The JSON Schema of a release spec, as a dict."""
    spec = spec_models()
    root = spec.ReleaseSpec
    schema = root.model_json_schema(mode="validation")
    defs = schema.setdefault("$defs", {})
    props = schema["properties"]
    for name, field in root.model_fields.items():
        if field.exclude:
            props.pop(name, None)
            if name in schema.get("required", []):
                schema["required"].remove(name)

    key = _lift_defs(spec.KeyDeclaration.model_json_schema(mode="validation"), defs)
    defs[key["title"]] = key
    props["quasi_identifiers"]["items"] = {
        "anyOf": [{"type": "string"}, {"$ref": f"#/$defs/{key['title']}"}]
    }

    methods = []
    for name, method in sorted(method_registry().items()):
        sub = _lift_defs(method.params.model_json_schema(mode="validation"), defs)
        sub["title"] = name
        sub["properties"]["name"] = {"const": name, "type": "string"}
        sub["required"] = ["name", *(r for r in sub.get("required", []) if r != "name")]
        defs[f"method_{name}"] = sub
        methods.append({"$ref": f"#/$defs/method_{name}"})
    base = props["method"]
    props["method"] = {"oneOf": methods}
    if "description" in base:
        props["method"]["description"] = base["description"]
    defs.pop(base.get("$ref", "").rsplit("/", 1)[-1], None)

    checks = props["checks"]
    checks["properties"] = {
        k: {"type": "number", "minimum": 0, **({"maximum": g.upper} if g.upper is not None else {})}
        for k, g in sorted(gate_registry().items())
    }
    checks["additionalProperties"] = False

    schema["$defs"] = dict(sorted(defs.items()))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def dumps(schema: dict[str, Any]) -> str:
    """The committed file's text: sorted keys, two-space indent, a final newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(dumps(release_schema()))
