"""Build steps the declarative configuration in pyproject.toml cannot express.

* **A fresh build/ for our packages.** setuptools copies sources into ``build/lib`` and never removes what
  is no longer there, so a fixture deleted from the checkout would still ship from a stale ``build/``.
  Our packages' folders in the build directory are emptied before every build.
* **A JSON copy of the corpus.** Every YAML file under ``fixtures/`` is also written, as JSON data with
  the SHA-256 of its YAML text, into ``relavium_conformance/fixtures/corpus.json`` inside the wheel:
  readers in other languages need no YAML library, and the kit skips parsing a file whose hash matches.
  The YAML stays the source; the copy exists only in built packages.
* **A long description whose links work off GitHub.** README.md links to ``docs/...`` relatively; the
  long description gets the same text with every relative link made absolute under the ``Source`` URL.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import tomllib
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
OUR_PACKAGES = ("relavium_conformance", "relavium_reference")


def _data_module() -> ModuleType:
    """The kit's ``_data.py`` on its own (it needs only the standard library and ruamel.yaml)."""
    spec = importlib.util.spec_from_file_location("_relavium_build_data", ROOT / "conformance" / "_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithCorpus(build_py):
    def run(self) -> None:
        for package in OUR_PACKAGES:
            shutil.rmtree(Path(self.build_lib) / package, ignore_errors=True)
        super().run()
        data = _data_module()
        target = Path(self.build_lib) / "relavium_conformance" / "fixtures" / data.CORPUS_JSON
        target.parent.mkdir(parents=True, exist_ok=True)
        corpus = data.build_corpus_json(ROOT / "fixtures")
        target.write_text(
            json.dumps(corpus, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
        )


def long_description() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = project["urls"]["Source"].rstrip("/") + "/blob/main/"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # [label](relative/path) -> [label](SOURCE/blob/main/relative/path); absolute links and anchors stay
    return re.sub(r"\]\((?![a-z][a-z0-9+.-]*:|#|/)([^)\s]+)\)", lambda m: f"]({base}{m.group(1)})", text)


setup(
    cmdclass={"build_py": BuildPyWithCorpus},
    long_description=long_description(),
    long_description_content_type="text/markdown",
)
