"""BENCHMARKS.md and RELIABILITY.md show only figures from recorded runs (issue 34, item 5:
"Hand-typed figures are not kept beside measured ones"). Their tables are rendered from
`bench/results/measured/` and checked by `tests/test_doc_excerpts.py`; this keeps the pages
from growing back a section of figures typed in from runs nobody recorded."""

from __future__ import annotations

import pytest

from scripts.doc_excerpts import ROOT

UNRECORDED = ("History (not re-measured)", "not re-measured", "read by hand", "typed in from")
"""How the pages introduced figures with no recorded run, until issue 34 removed them."""


@pytest.mark.parametrize("page", ["BENCHMARKS.md", "RELIABILITY.md"])
def test_a_figures_page_keeps_no_unrecorded_figures(page: str) -> None:
    text = (ROOT / page).read_text()
    for said in UNRECORDED:
        assert said not in text, f"{page} says {said!r}"
