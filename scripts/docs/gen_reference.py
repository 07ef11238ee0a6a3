"""mkdocs-gen-files script (mkdocs.yml): writes the generated reference pages into the site at
build time, from `scripts.docs.reference`. Nothing it writes is committed, so nothing can be
stale."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from scripts.docs.reference import pages

for path, text in pages().items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(text)
