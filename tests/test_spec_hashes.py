"""What makes a re-run "the same release" (issue #13, item 3): the public spec hash (published
in the manifest) and the secrets' hash (kept in the warehouse only)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from sdcflow.flows.release import already_published
from sdcflow.spec.load import spec_from_dict

BODY = {
    "release": "r",
    "source": "data.csv",
    "quasi_identifiers": ["a", "b"],
    "method": {"name": "mdav", "k": 3},
    "seed": 7,
}


def _spec(**changes):
    return spec_from_dict({**BODY, **changes}, base_dir=Path("."))


def test_where_the_work_runs_and_the_retention_do_not_change_the_release():
    base = _spec()
    for other in (
        _spec(runner="dask"),
        _spec(runner="dask", dask={"workers": 2}),
        _spec(retention={"keep_last": 1}),
    ):
        assert other.sha256() == base.sha256()
        assert other.secrets_sha256() == base.secrets_sha256()


def test_another_seed_is_another_release_and_the_public_hash_does_not_carry_it():
    a, b = _spec(seed=7), _spec(seed=8)
    assert a.sha256() == b.sha256()  # the manifest's hash: it must not depend on a secret
    assert a.secrets_sha256() != b.secrets_sha256()
    assert "7" not in json.dumps(a.public_dict().get("seed", ""))


def test_a_rerun_with_another_seed_publishes_again(tmp_path, monkeypatch):
    import sdcflow.flows.decision as decision

    monkeypatch.setattr(decision, "published_run", lambda folder: "run1")  # the live release
    monkeypatch.setattr(decision, "files_intact", lambda folder: True)  # as its manifest lists
    spec = spec_from_dict({**BODY, "seed": 7}, base_dir=tmp_path)
    spec.release_dir.mkdir(parents=True)  # the folder this spec publishes to
    last = {
        "run_id": "run1",
        "input_sha256": "abc",
        "spec_sha256": spec.sha256(),
        "published_to": str(spec.release_dir),
        "started_at": None,
        "secrets_sha256": spec.secrets_sha256(),
    }
    warehouse = SimpleNamespace(latest_published=lambda release: last)
    assert already_published(SimpleNamespace(spec=spec, source_sha256="abc"), warehouse) == last
    other = SimpleNamespace(
        spec=spec_from_dict({**BODY, "seed": 8}, base_dir=tmp_path), source_sha256="abc"
    )
    assert already_published(other, warehouse) is None
    elsewhere = tmp_path / "elsewhere"  # another spec's folder: not this spec's release
    elsewhere.mkdir()
    moved = SimpleNamespace(
        latest_published=lambda release: {**last, "published_to": str(elsewhere)}
    )
    assert already_published(SimpleNamespace(spec=spec, source_sha256="abc"), moved) is None
    last["secrets_sha256"] = None  # a run recorded before the column existed
    assert already_published(SimpleNamespace(spec=spec, source_sha256="abc"), warehouse) is None


def test_the_files_a_spec_names_are_part_of_its_hash(tmp_path):
    """A rules file or a recoding hierarchy decides the release as much as the spec's own
    text: editing one changes the hash; a spec that names no file keeps its hash."""
    (tmp_path / "rules.yaml").write_text("- a >= 0\n")
    (tmp_path / "h.csv").write_text("x;X\ny;X\n")
    body = {**BODY, "rules_file": "rules.yaml", "recode": {"b": {"hierarchy": "h.csv"}}}
    before = spec_from_dict(body, base_dir=tmp_path).sha256()
    assert spec_from_dict(body, base_dir=tmp_path).sha256() == before
    (tmp_path / "rules.yaml").write_text("- a >= 1\n")
    after_rules = spec_from_dict(body, base_dir=tmp_path).sha256()
    assert after_rules != before
    (tmp_path / "h.csv").write_text("x;X\ny;Y\n")
    assert spec_from_dict(body, base_dir=tmp_path).sha256() != after_rules
    assert _spec().named_files_sha256() == {}  # no file named: the hash it always had


def test_an_option_a_method_gained_later_keeps_the_hash_of_specs_without_it():
    """heterogeneous gained cell_size; a spec without it must keep the hash it had before
    (pinned: computed by the code before the option), or its re-run would publish again."""

    def sha256(**method):
        body = {**BODY, "method": {"name": "heterogeneous", "k": 3, **method}}
        return spec_from_dict(body, base_dir=Path(".")).sha256()

    mode = "8febf9e769c7318bc723c96640d10855e5c9a9a20b23dc0abc8fa5227ca08141"
    assert sha256() == mode
    suppress = "d11d030b864722f5812958d1ed6ee081bdc49fed98d8cb19960e97c6b0d04912"
    assert sha256(categorical="suppress") == suppress
    assert sha256(cell_size=100) != mode  # given, it counts
    assert sha256(cell_size=None) == mode
