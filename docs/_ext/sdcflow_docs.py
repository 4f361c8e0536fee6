"""The reference pages generated from the code at build time.

On ``config-inited`` this writes Markdown fragments into ``docs/_generated/`` (not committed),
which the reference pages include:

``api.md`` and ``api/<module>.md``
    a page with the ``automodule`` of each module named in ``sdcflow_api_modules`` (conf.py),
    and the toctree of those pages that the reference page includes: a module joins the Python
    reference by one line there. One page a module, because a module docstring's numpydoc
    sections (``References``) become sections whose ids would clash on a shared page.
``cli.md``
    ``sdcflow --help`` and each subcommand's ``--help``, from the parser the program builds.
``reasons.md``
    the members of ``sdcflow.errors.Reason`` with the comment beside each in the source.
``spec.md`` and ``extra/release.schema.json``
    the release spec's fields and its JSON Schema (``schema/generate.py``); the schema is
    copied to the site's root, so editors can point at the published URL. A schema that
    differs from the committed ``schema/release.schema.json`` is a warning (an error under
    ``sphinx-build -W``): re-generate the file.

Nothing here needs the network.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import io
import json
import os
import re
import tokenize
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
REPO = DOCS.parent
OUT = DOCS / "_generated"
HELP_WIDTH = "88"


def _schema_generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "schema_generate", REPO / "schema" / "generate.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# --- the Python API -------------------------------------------------------------------------


def api_toctree(modules: list[str]) -> str:
    """The toctree of the module pages, included by ``reference/api.md``."""
    entries = "".join(f"../_generated/api/{name}\n" for name in modules)
    return f"```{{toctree}}\n:maxdepth: 1\n\n{entries}```\n"


def api_module_markdown(name: str) -> str:
    # autodoc writes reStructuredText: parsed as such, not as the page's Markdown
    return f"# `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n   :members:\n```\n"


_SECTION = re.compile(r"^-{3,}$")


def module_sections_as_rubrics(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Render a module docstring's numpydoc headings (``References``, ``Notes``) as rubrics.

    numpydoc rewrites the sections of functions and classes into rubrics but leaves a module's
    docstring alone, so its headings would be reStructuredText sections: labels that clash
    between modules (``references``) and headings in the page's table of contents.
    """
    if what != "module":
        return
    for i in range(len(lines) - 1):
        title, underline = lines[i].strip(), lines[i + 1].strip()
        if title and _SECTION.match(underline) and len(underline) == len(title):
            lines[i], lines[i + 1] = f".. rubric:: {title}", ""


def skip_foreign_member(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """Leave out a module's members imported from outside sdcflow (``cKDTree``, ``dataclass``).

    autodoc would leave them out too, but only after formatting their signature, which fails
    for some compiled classes; a module's own members and those sdcflow re-exports stay.
    """
    if what == "module" and (inspect.isclass(obj) or inspect.isroutine(obj)):
        module = getattr(obj, "__module__", None) or ""
        if module.split(".")[0] != "sdcflow":
            return True
    return None


# --- the command line -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    return importlib.import_module("sdcflow.cli.main").build_parser()


def cli_markdown() -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps at the terminal's width
    try:
        parser = _parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = [f"### `sdcflow`\n\n```text\n{parser.format_help().rstrip()}\n```\n"]
        for name, subparser in sub.choices.items():
            parts.append(
                f"### `sdcflow {name}`\n\n```text\n{subparser.format_help().rstrip()}\n```\n"
            )
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


# --- reason codes ---------------------------------------------------------------------------

_MEMBER = re.compile(r"^\s*([A-Z][A-Z0-9_]*)\s*=\s*\"([^\"]+)\"")


def reasons_markdown() -> str:
    """One table per group of ``Reason``; a full-line comment in the class opens a group, the
    comment beside a member says what it means."""
    from sdcflow.errors import Reason

    source = inspect.getsource(Reason)
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    groups: list[tuple[str, list[tuple[str, str, str]]]] = [("", [])]
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith("#"):
            groups.append((comments[number], []))
            continue
        match = _MEMBER.match(line)
        if match:
            name, value = match.groups()
            assert Reason[name].value == value, name
            groups[-1][1].append((value, name, comments.get(number, "")))
    listed = {name for _, rows in groups for _, name, _ in rows}
    missing = [m.name for m in Reason if m.name not in listed]
    if missing:
        raise RuntimeError(f"Reason members not found in its source: {missing}")
    parts = []
    for title, rows in groups:
        if not rows:
            continue
        head = f"**{title[0].upper() + title[1:]}**\n\n" if title else ""
        table = "| code | `Reason` member | meaning |\n|---|---|---|\n" + "".join(
            f"| `{value}` | `{name}` | {_cell(meaning)} |\n" for value, name, meaning in rows
        )
        parts.append(head + table)
    return "\n".join(parts)


# --- the release spec -----------------------------------------------------------------------


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1].removeprefix("method_")
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(_type(s) for s in schema[key]))
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"mapping to {_type(schema['additionalProperties'])}"
    if kind == "string" and schema.get("format") == "path":
        return "path"
    return kind


def _fields_table(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    rows = "| field | type | default | description |\n|---|---|---|---|\n"
    for name, prop in schema.get("properties", {}).items():
        default = "required" if name in required else json.dumps(prop.get("default", None))
        rows += (
            f"| `{name}` | {_cell(_type(prop))} | {_cell(default)} "
            f"| {_cell(prop.get('description', ''))} |\n"
        )
    return rows


def spec_markdown(schema: dict[str, Any]) -> str:
    parts = ["### `ReleaseSpec` (the file)\n\n" + _fields_table(schema)]
    for name, definition in schema.get("$defs", {}).items():
        if definition.get("properties"):
            title = name.removeprefix("method_")
            what = f"method `{title}`" if name.startswith("method_") else f"`{title}`"
            parts.append(f"### {what}\n\n{_fields_table(definition)}")
    return "\n".join(parts)


# --- hooks ----------------------------------------------------------------------------------


def _write(name: str, text: str) -> None:
    path = OUT / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:  # unchanged files keep Sphinx's cache
        path.write_text(text)


def generate(app: Sphinx, config: Config) -> None:
    modules = list(config.sdcflow_api_modules)
    _write("api.md", api_toctree(modules))
    for name in modules:
        _write(f"api/{name}.md", api_module_markdown(name))
    for stale in (OUT / "api").glob("*.md"):  # a module dropped from the list: no orphan page
        if stale.stem not in modules:
            stale.unlink()
    _write("cli.md", cli_markdown())
    _write("reasons.md", reasons_markdown())
    generator = _schema_generator()
    schema = generator.release_schema()
    text = generator.dumps(schema)
    _write("spec.md", spec_markdown(schema))
    _write("extra/release.schema.json", text)
    committed = REPO / "schema" / "release.schema.json"
    if not committed.exists() or committed.read_text() != text:
        logger.warning(
            "schema/release.schema.json differs from what the spec models generate: "
            "python schema/generate.py > schema/release.schema.json"
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("sdcflow_api_modules", [], "env")
    app.connect("config-inited", generate)  # before html_extra_path is checked (priority 800)
    app.connect("autodoc-skip-member", skip_foreign_member)
    app.connect("autodoc-process-docstring", module_sections_as_rubrics)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
