"""Great Expectations Data Docs render styled with no network: every stylesheet, script and
image is a file next to the pages, and a browser that cannot reach the network shows them
styled, with the index page's tables filled."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin
from urllib.request import url2pathname

import pandas as pd
import pytest
from browser import REFERENCES, Chromium

from sdcflow.expectations.compile import compile_rule
from sdcflow.expectations.docs import make_offline
from sdcflow.expectations.rules import parse_rules
from sdcflow.expectations.suite import validate_frame

ASSET = re.compile(r"<(?:link|script|img)\b[^>]*\b(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    rules = parse_rules(["a == b", {"rule": "c >= 1", "severity": "warning"}])
    compiled = [compile_rule(r) for r in rules]
    frame = pd.DataFrame({"sdc_row_id": [0, 1, 2], "R1": [0.0, 0.0, 1.0], "R2": [0.0, 1.0, 2.0]})
    folder = tmp_path_factory.mktemp("docs")
    report = validate_frame(frame, compiled, docs_dir=folder)
    assert report.docs_path == folder / "index.html"
    return folder


def test_no_remote_asset_is_left_and_every_local_one_resolves(docs):
    pages = sorted(docs.rglob("*.html"))
    assert len(pages) >= 3  # index, the suite, a validation
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assets = ASSET.findall(text)
        assert assets, page
        remote = [a for a in assets if a.startswith(("http://", "https://", "//"))]
        assert not remote, (page, remote)
        for asset in assets:
            target = (page.parent / asset.split("?")[0]).resolve()
            assert target.is_file(), (page, asset)
        assert not re.search(r"url\(['\"]?https?://", text)  # inline styles too
        # text links may stay: they load nothing
        assert "bootstrap.min.css" in text and "jquery.min.js" in text
    for css in (docs / "static").rglob("*.css"):
        assert not re.search(r"url\(['\"]?https?://", css.read_text(encoding="utf-8")), css


def test_rewriting_is_idempotent(docs):
    before = {p: p.read_text(encoding="utf-8") for p in docs.rglob("*.html")}
    assert make_offline(docs) == []
    assert {p: p.read_text(encoding="utf-8") for p in docs.rglob("*.html")} == before


def test_pages_render_styled_in_a_browser_without_network(docs, tmp_path):
    index = (docs / "index.html").as_uri()
    with Chromium(tmp_path / "profile") as browser:
        visit = browser.visit(index)
        assert all(u.startswith(("file://", "data:")) for u in visit.requests), visit.requests
        assert not visit.failed
        for _, ref in browser.evaluate(REFERENCES):
            if ref.startswith(("http://", "https://")):  # plain text links only
                continue
            url = urljoin(index, ref)
            if url.startswith("file://") and "#" not in ref:
                assert Path(url2pathname(url[len("file://") :].split("?")[0])).exists(), ref
        # Bootstrap's styles apply (unstyled pages have a serif font and no navbar layout)
        assert "apple-system" in browser.evaluate("getComputedStyle(document.body).fontFamily")
        assert browser.evaluate("getComputedStyle(document.querySelector('.navbar')).display") == (
            "flex"
        )
        # Bootstrap's JS loaded on this jQuery (Bootstrap 4 throws at load on jQuery >= 4)
        assert browser.evaluate("typeof jQuery.fn.collapse") == "function"
        # the validation list GE renders from embedded data: one row per validation
        rows = browser.evaluate(
            "document.querySelectorAll('.ge-index-page-validation-results-table tbody tr').length"
        )
        assert rows == 1
        logo = browser.evaluate("(() => { const i = document.querySelector('.navbar img');"
                                " return i.complete && i.naturalWidth; })()")  # fmt: skip
        assert logo > 0
        page = next(docs.glob("validations/**/*.html")).as_uri()
        visit = browser.visit(page)
        assert all(u.startswith(("file://", "data:")) for u in visit.requests)
        assert not visit.failed
        assert "apple-system" in browser.evaluate("getComputedStyle(document.body).fontFamily")
