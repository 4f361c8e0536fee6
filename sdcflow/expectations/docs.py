"""Great Expectations Data Docs that render styled with no network.

GE 1.x pages load Bootstrap, jQuery, bootstrap-table, Font Awesome, a date picker and Vega
from public CDNs, and their logo from a web bucket, so in an office without internet (where
confidential data lives) they render unstyled with a broken logo. GE's ChoiceLoader tries
its own templates before a site's ``custom_views_directory``, so the templates cannot be
overridden; :func:`make_offline` rewrites the built pages instead:

* Bootstrap 4 (CSS and the JS bundle with Popper) and jQuery are copied from the
  ``XStatic-Bootstrap`` / ``XStatic-jQuery`` packages into ``static/vendor/`` next to GE's own
  ``static/`` folder, with ``sdcflow-docs.js`` (a small stand-in for bootstrap-table that
  renders the index page's tables from the data GE embeds) and ``sdcflow-docs.css`` (the
  two status icons GE takes from Font Awesome);
* every ``<link>`` and ``<script>`` that points at ``http(s)://`` is replaced by those
  local files, in place (so scripts keep their order) and only once per page;
* GE's logo (page ``<img>`` and the ``url(...)`` in its styles) points at the copy GE ships
  in ``static/images/``, and every relative path into ``static/`` is recomputed from the
  page's depth (GE writes the favicon of a validation page one level short).

Plain text links (``<a href="https://greatexpectations.io">``) are left as they are: they
load nothing.
"""

from __future__ import annotations

import os
import re
import shutil
from importlib import resources
from pathlib import Path

__all__ = ["VENDOR", "make_offline"]

VENDOR = "vendor"

# (package, path inside it, name in static/vendor)
_ASSETS = (
    ("xstatic.pkg.bootstrap", "data/css/bootstrap.min.css", "bootstrap.min.css"),
    ("xstatic.pkg.bootstrap", "data/js/bootstrap.bundle.min.js", "bootstrap.bundle.min.js"),
    ("xstatic.pkg.jquery", "data/jquery.min.js", "jquery.min.js"),
    ("sdcflow.expectations", "docs_assets/sdcflow-docs.js", "sdcflow-docs.js"),
    ("sdcflow.expectations", "docs_assets/sdcflow-docs.css", "sdcflow-docs.css"),
)
_STYLES = ("bootstrap.min.css", "sdcflow-docs.css")
_SCRIPTS = ("jquery.min.js", "bootstrap.bundle.min.js", "sdcflow-docs.js")

_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>", re.IGNORECASE)
_REMOTE_SCRIPT = re.compile(
    r"<script\b[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.IGNORECASE
)
_REMOTE_IMAGE = re.compile(
    r"src=\"https?://[^\"]*/([A-Za-z0-9_.-]+\.(?:png|svg|gif))(?:\?[^\"]*)?\""
)
_REMOTE_URL = re.compile(r"url\(['\"]?https?://[^)'\"]*/([A-Za-z0-9_.-]+\.(?:png|svg|gif))['\"]?\)")
_LOCAL_STATIC = re.compile(r"(src|href)=\"(?:\./|(?:\.\./)+)?static/")
_LOGO = "logo-long.png"


def _copy_assets(static: Path) -> None:
    vendor = static / VENDOR
    vendor.mkdir(parents=True, exist_ok=True)
    for package, inner, name in _ASSETS:
        with resources.as_file(resources.files(package).joinpath(inner)) as source:
            shutil.copyfile(source, vendor / name)


def _local_image(static: Path, prefix: str, name: str) -> str:
    """``prefix/images/name`` when GE ships that image, else its long logo."""
    shipped = name if (static / "images" / name).is_file() else _LOGO
    return f"{prefix}/images/{shipped}"


def _rewrite_page(text: str, static: Path, prefix: str) -> str:
    """One page with every remote stylesheet, script and image made local."""
    styles = "\n".join(f'<link rel="stylesheet" href="{prefix}/{VENDOR}/{n}">' for n in _STYLES)
    scripts = "\n".join(f'<script src="{prefix}/{VENDOR}/{n}"></script>' for n in _SCRIPTS)
    done = {"styles": False, "scripts": False}

    def once(kind: str, block: str) -> str:
        if done[kind]:
            return ""
        done[kind] = True
        return block

    # GE writes some relative paths to static/ one level short (the favicon of a validation)
    text = _LOCAL_STATIC.sub(lambda m: f'{m.group(1)}="{prefix}/', text)
    text = _REMOTE_LINK.sub(lambda m: once("styles", styles), text)
    text = _REMOTE_SCRIPT.sub(lambda m: once("scripts", scripts), text)
    text = _REMOTE_IMAGE.sub(lambda m: f'src="{_local_image(static, prefix, m.group(1))}"', text)
    text = _REMOTE_URL.sub(lambda m: f"url('{_local_image(static, prefix, m.group(1))}')", text)
    stand_in = f"{prefix}/{VENDOR}/sdcflow-docs.js"
    if not done["scripts"] and "bootstrapTable(" in text and stand_in not in text:
        text = text.replace("</head>", scripts + "\n</head>", 1)
    return text


def make_offline(docs_dir: str | Path) -> list[Path]:
    """Make the Data Docs site built in ``docs_dir`` render with no network (module
    docstring). Idempotent; returns the pages rewritten.

    Parameters
    ----------
    docs_dir : path
        The site's base directory (``index.html`` and GE's ``static/`` folder).
    """
    docs = Path(docs_dir)
    static = docs / "static"
    _copy_assets(static)
    for css in (static / "styles").glob("*.css"):
        text = css.read_text(encoding="utf-8")
        local = _REMOTE_URL.sub(lambda m: f"url('{_local_image(static, '..', m.group(1))}')", text)
        if local != text:
            css.write_text(local, encoding="utf-8")
    pages = []
    for page in sorted(docs.rglob("*.html")):
        prefix = Path(os.path.relpath(static, page.parent)).as_posix()
        text = page.read_text(encoding="utf-8")
        local = _rewrite_page(text, static, prefix)
        if local != text:
            page.write_text(local, encoding="utf-8")
            pages.append(page)
    return pages
