"""Where a run writes new counterexamples when no --corpus-dir is given: never into the curated corpus shipped
with TorchCTS.

The default is the working folder's own `./corpus`, where a backend team keeps its cases and
from where `torchcts replay` reads them. Run from a TorchCTS source checkout, `./corpus` is the
package's curated corpus (`torchcts.corpus`, reviewed cases only), so there the default is
`<results-dir>/corpus` instead; reviewed cases are copied into the curated corpus by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

WORKING_CORPUS = Path("corpus")


def default_corpus_dir(results_dir: Path, cwd: Path | None = None) -> Path:
    """`./corpus`, unless it is the shipped curated corpus: then `results_dir/corpus`.

    `cwd` is the folder `./corpus` is relative to (the current folder when None); the answer is
    relative when the inputs are, as a user would type it."""
    if is_shipped_corpus((cwd or Path.cwd()) / WORKING_CORPUS):
        return Path(results_dir) / "corpus"
    return WORKING_CORPUS if cwd is None else cwd / WORKING_CORPUS


def is_shipped_corpus(folder: Path) -> bool:
    """Whether `folder` is the curated corpus installed as `torchcts.corpus` (compared as resolved paths)."""
    from torchcts.cases.files import builtin_corpus  # cases.files loads torch: the CLI's options run without it

    try:
        return os.path.samefile(folder, builtin_corpus())
    except OSError:  # `folder` does not exist (or cannot be looked at): it is not the package's folder
        return False
