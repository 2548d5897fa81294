"""Where the installed property suites are: every module of `torchcts.properties.suites` is one.

Light on purpose (no torch, no registry): the pytest plugin asks it, for every file pytest
visits, whether the file is a suite it must collect, and the registry imports what it lists.
"""

from __future__ import annotations

import importlib.util
import pkgutil
from functools import lru_cache
from pathlib import Path

SUITES_PACKAGE = "torchcts.properties.suites"  # every module in it is a suite, whatever its name


@lru_cache(maxsize=1)
def suites_folder() -> Path | None:
    """The folder of the installed suite modules; None where the package is not installed."""
    spec = importlib.util.find_spec(SUITES_PACKAGE)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]).resolve() if locations else None


def suite_modules() -> tuple[str, ...]:
    """The module names of the installed suites (`torchcts.properties.suites.<area>`), sorted; imports none."""
    folder = suites_folder()
    infos = pkgutil.iter_modules([str(folder)]) if folder is not None else ()
    return tuple(sorted(f"{SUITES_PACKAGE}.{info.name}" for info in infos if not info.ispkg))


def suite_module_of(path: Path) -> str | None:
    """The suite module a file is (`.../suites/forward.py` -> `torchcts.properties.suites.forward`), or None."""
    folder = suites_folder()
    if folder is None or path.suffix != ".py" or path.name == "__init__.py" or not path.stem.isidentifier():
        return None
    return f"{SUITES_PACKAGE}.{path.stem}" if path.resolve().parent == folder else None
