"""The published JSON Schema of a release spec (``schema/release.schema.json``) is what the
models generate today, and it accepts the shipped specs and refuses what the loader refuses."""

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schema" / "release.schema.json"


def _generator():
    spec = importlib.util.spec_from_file_location(
        "schema_generate", REPO / "schema" / "generate.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_what_the_models_generate():
    generate = _generator()
    assert SCHEMA.read_text() == generate.dumps(generate.release_schema()), (
        "the spec models changed: python schema/generate.py > schema/release.schema.json"
    )


@pytest.mark.parametrize(
    "path", sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("examples/**/release*.yaml"))
)
def test_every_shipped_spec_is_valid_under_the_schema(path):
    spec = yaml.safe_load((REPO / path).read_text())
    assert [e.message for e in _validator().iter_errors(spec)] == []


@pytest.mark.parametrize(
    "change",
    [
        {"methd": {"name": "mdav", "k": 5}},  # an unknown key
        {"method": {"name": "mdav", "k": 1}},  # k below its minimum
        {"method": {"name": "mdav", "k": 5, "m1": 1.1}},  # a fuzzy parameter under mdav
        {"method": {"name": "nosuch", "k": 5}},
        {"checks": {"k_anonimity": 5}},  # an unknown check
        {"checks": {"max_individual_risk": 1.5}},  # a probability above 1
        {"quasi_identifiers": [{"type": "ordinal"}]},  # a key mapping without its name
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(change, tmp_path):
    from sdcflow.errors import InputError
    from sdcflow.spec.load import spec_from_dict as load

    base = {"release": "r", "source": "d.csv", "quasi_identifiers": ["x"]}
    base["method"] = {"name": "mdav", "k": 5}
    assert _validator().is_valid(base)
    load(base, tmp_path)
    assert not _validator().is_valid({**base, **change})
    with pytest.raises(InputError):
        load({**base, **change}, tmp_path)
