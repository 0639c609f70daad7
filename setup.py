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
import sys
import tomllib
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
OUR_PACKAGES = ("relavium_conformance", "relavium_reference")


def _data_module() -> ModuleType:
    """The kit's ``_data.py``, imported from the source folders.

    It needs the standard library, ruamel.yaml and the kit's exception root, which derives from the
    engine's; both packages' ``__init__`` import their names on first use, so nothing else is imported.
    """
    for name, folder in (("relavium_reference", "reference"), ("relavium_conformance", "conformance")):
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(
            name, ROOT / folder / "__init__.py", submodule_search_locations=[str(ROOT / folder)]
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return importlib.import_module("relavium_conformance._data")


class BuildPyWithCorpus(build_py):
    def run(self) -> None:
        for package in OUR_PACKAGES:
            shutil.rmtree(Path(self.build_lib) / package, ignore_errors=True)
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's YAML (and its parse cache): no copy to make
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
