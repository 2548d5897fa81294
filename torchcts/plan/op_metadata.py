"""What planning needs of every OpInfo, cached on disk so a plan starts without importing the op database.

A plan asks each OpInfo property's item source (`OpInfoItems`: `applies(op)`, `dtypes(op)`) about
every OpInfo; the coverage audit asks the same and reads the OpInfo's names. None of it needs the
sample functions, yet importing `torch.testing._internal.common_methods_invocations` takes seconds.
So the answers are computed once from the op database and stored as JSON (`OpMetadata` per OpInfo:
its names, and per item source the claimable dtypes it gives, or null where it does not apply).

An item source is known by its callables' qualified names (`source_key`) and fingerprinted by their
code and the source files defining them (`source_fingerprint`): editing a suite's `applies` makes
the cache stale without a version bump. The file's name carries the torch and TorchCTS versions;
inside, the environment (torch build, Python, the DSLs that add OpInfos) and the fingerprints are
checked on every read. A file that is missing is built (one line on stderr says so); one that is
stale or corrupt is rebuilt with an `OpMetadataWarning` naming the file and why. Reading never
executes anything, is size-bounded and validates every field (`op_metadata_file`). Writes are
atomic (a temporary file renamed over it): pytest-xdist workers and CI shards build it at once.

A property whose item source the cache cannot answer (a custom suite's own callables) makes
planning read the op database itself (`planning_ops` returns the real OpInfos): correct first.
`torchcts sync-opinfo` rebuilds the file; docs/opinfo-cache.md describes all of this.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from torchcts import dtypes as dtype_names
from torchcts.plan import registry
from torchcts.core.cache_folder import CACHE_DIR_VARIABLE, cache_dir, safe_part  # noqa: F401 -- callers read them here
from torchcts.plan.op_metadata_file import OpMetadataFileError, read_catalog, write_catalog
from torchcts.plan.op_metadata_model import OpCatalog, OpMetadata



class OpMetadataWarning(UserWarning):
    """The OpInfo metadata cache was stale, corrupt or not writable: rebuilt, or planning read the op database."""


# -- item sources ----------------------------------------------------------------------------------------------


@functools.cache
def _properties_folders() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("torchcts.properties")  # its folders only: planning loads no suite here
    return tuple(Path(folder).resolve() for folder in spec.submodule_search_locations or ())


@functools.cache
def _module_of(filename: str, module: str) -> str:
    """The module name a function's file has in the installed package: pytest may import a suite file under
    another name (`properties.suites.errors` in a source checkout), which must not make it another source."""
    path = Path(filename).resolve()
    if path.suffix == ".py" and path.parent in _properties_folders():
        return f"torchcts.properties.{path.stem}"
    return module


def _qualified(function: Any) -> str | None:
    """`module:qualname` of a plain Python function (None for anything else: a partial, a callable object)."""
    code = getattr(function, "__code__", None)
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    if code is None or not isinstance(module, str) or not isinstance(qualname, str):
        return None
    return f"{_module_of(code.co_filename, module)}:{qualname}"


def source_key(items: Any) -> str | None:
    """The key of an OpInfo item source: its `applies` and `dtypes` callables' qualified names (None: unkeyable)."""
    parts = [_qualified(getattr(items, "applies", None)), _qualified(getattr(items, "dtypes", None))]
    return None if None in parts else " & ".join(parts)  # type: ignore[arg-type]


@functools.cache
def _file_digest(filename: str) -> str:
    try:
        return hashlib.sha256(Path(filename).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _code_digest(code: Any, into: Any) -> None:
    into.update(code.co_code)
    into.update(repr(code.co_names).encode())
    for constant in code.co_consts:
        if hasattr(constant, "co_code"):
            _code_digest(constant, into)
        else:
            into.update(repr(constant).encode())


def source_fingerprint(items: Any) -> str:
    """A digest of an item source's callables: their code and the whole source files defining them (a helper
    they call may change without their own code changing)."""
    digest = hashlib.sha256()
    for function in (items.applies, items.dtypes):
        _code_digest(function.__code__, digest)
        digest.update(_file_digest(function.__code__.co_filename).encode())
    return digest.hexdigest()[:32]


def installed_sources() -> dict[str, Any]:
    """key -> item source, for the installed suites' OpInfo properties and the default `OpInfoItems()` (what a
    custom suite that names no callables uses)."""
    found = {}
    for items in [registry.OpInfoItems()] + [spec.items for spec in registry.load() if not spec.scenario]:
        key = source_key(items)
        if key is not None:
            found.setdefault(key, items)
    return found


def answer(items: Any, op: Any) -> tuple[torch.dtype, ...] | None:
    """The claimable dtypes the item source gives for `op` (an OpInfo or an `OpMetadata`), in
    CLAIMABLE_DTYPES order; None where it does not apply. An `OpMetadata` answers from the cache
    (KeyError for a source it does not know: `planning_ops` hands one out only when it knows them all)."""
    if isinstance(op, OpMetadata):
        names = op.answers[source_key(items)]  # type: ignore[index]
        return None if names is None else tuple(dtype_names.lookup(name) for name in names)  # type: ignore[misc]
    if not items.applies(op):
        return None
    supported = set(items.dtypes(op))
    return tuple(dtype for dtype in dtype_names.CLAIMABLE_DTYPES if dtype in supported)


def alias_names(op: Any) -> tuple[str, ...]:
    """The names of an OpInfo's aliases (an `OpMetadata` holds them as names already)."""
    return tuple(alias if isinstance(alias, str) else alias.name for alias in getattr(op, "aliases", ()) or ())


# -- building ----------------------------------------------------------------------------------------------------


def environment() -> dict[str, str]:
    """What the op database's content depends on besides TorchCTS's own code: torch's version and build, the
    Python version, the DSLs that add OpInfos (`torch.backends.python_native`) and the variable restricting to one."""
    import torchcts

    try:
        import torch.backends.python_native as native

        dsls = ",".join(sorted(native.available_dsls))
    except Exception:  # noqa: BLE001 - an older torch has no DSL registry: no DSL adds OpInfos
        dsls = ""
    return {"torch": torch.__version__, "torch_git": str(getattr(torch.version, "git_version", "") or ""),
            "torchcts": torchcts.__version__, "python": "%d.%d" % sys.version_info[:2], "dsls": dsls,
            "OPINFO_RESTRICT_TO_DSL": os.environ.get("OPINFO_RESTRICT_TO_DSL", "")}


def describe(op: Any, sources: Mapping[str, Any]) -> OpMetadata:
    """The metadata of one OpInfo: its names and every source's answer."""
    answers = {}
    for key, items in sources.items():
        dtypes = answer(items, op)
        answers[key] = None if dtypes is None else tuple(dtype_names.canonical_name(d) for d in dtypes)
    return OpMetadata(op.name, op.variant_test_name or "", getattr(op, "aten_name", None) or op.name,
                      alias_names(op), answers)


def build(sources: Mapping[str, Any] | None = None) -> OpCatalog:
    """Compute the catalog from the op database (imports it: seconds) for `sources` (the installed ones)."""
    from torchcts.plan.catalog import all_ops  # the op database: only when the cache is built

    sources = installed_sources() if sources is None else dict(sources)
    start = time.perf_counter()
    ops = tuple(describe(op, sources) for op in all_ops())
    fingerprints = {key: source_fingerprint(items) for key, items in sources.items()}
    return OpCatalog(environment(), fingerprints, ops, time.perf_counter() - start)


# -- the cache file ----------------------------------------------------------------------------------------------


def cache_path(env: Mapping[str, str] | None = None) -> Path:
    """The cache file of this torch and TorchCTS version (several versions side by side keep their own)."""
    env = environment() if env is None else env
    return cache_dir() / f"opinfo-torch-{safe_part(env['torch'])}-torchcts-{safe_part(env['torchcts'])}.json"


def stale_reason(catalog: OpCatalog, env: Mapping[str, str], sources: Mapping[str, Any]) -> str | None:
    """Why a catalog read from disk does not describe this environment and these item sources, or None."""
    for key, value in env.items():
        if catalog.environment.get(key) != value:
            return f"it was built for {key} {catalog.environment.get(key)!r}, this is {value!r}"
    for key, items in sources.items():
        if key not in catalog.sources:
            return f"it does not know the item source {key}"
        if catalog.sources[key] != source_fingerprint(items):
            return f"the item source {key} changed since it was built"
    return None


def _usable(path: Path, env: Mapping[str, str], sources: Mapping[str, Any]) -> tuple[OpCatalog | None, str]:
    """(the catalog at `path` if fresh, else None; and why not: "missing", or a one-line problem)."""
    try:
        catalog = read_catalog(path)
    except FileNotFoundError:
        return None, "missing"
    except OpMetadataFileError as exc:
        return None, str(exc)
    why = stale_reason(catalog, env, sources)
    return (catalog, "") if why is None else (None, f"{path}: stale: {why}")


_LOADED: dict[Path, tuple[tuple[int, int], OpCatalog]] = {}  # path -> ((mtime_ns, size), catalog): one parse a process


def current() -> OpCatalog:
    """The cached catalog, read from disk, or built and written when it is missing (a line on stderr says so),
    stale or corrupt (an `OpMetadataWarning` says which file and why). A cache folder that cannot be written
    gives the built catalog with a warning: planning works, only slower next time."""
    env, sources = environment(), installed_sources()
    path = cache_path(env)
    try:
        stat = path.stat()
        signature = (stat.st_mtime_ns, stat.st_size)
        known = _LOADED.get(path)
        if known is not None and known[0] == signature and stale_reason(known[1], env, sources) is None:
            return known[1]
    except OSError:
        signature = None
    catalog, why = _usable(path, env, sources)
    if catalog is not None:
        if signature is not None:
            _LOADED[path] = (signature, catalog)
        return catalog
    if why == "missing":
        print(f"torchcts: building the OpInfo metadata cache {path} (once per torch and TorchCTS version; "
              "`torchcts sync-opinfo` rebuilds it)", file=sys.stderr)
    else:
        warnings.warn(f"{why}; rebuilding it", OpMetadataWarning, stacklevel=2)
    catalog = build(sources)
    try:
        write_catalog(path, catalog)
    except OSError as exc:
        warnings.warn(f"{path}: cannot write the OpInfo metadata cache ({exc.strerror or exc}); planning reads "
                      f"the op database until it can (set {CACHE_DIR_VARIABLE} to a writable folder)",
                      OpMetadataWarning, stacklevel=2)
    return catalog


def planning_ops(item_sources: Iterable[Any]) -> Sequence[Any]:
    """The OpInfos to plan over: the cached metadata when the cache answers every one of `item_sources`
    (the installed suites' and the default ones), else the op database's OpInfos themselves."""
    from torchcts.plan.catalog import all_ops  # the op database: only when the cache is built

    installed = installed_sources()
    if any(source_key(items) not in installed for items in item_sources):
        return all_ops()  # a custom suite's own callables: only the real OpInfos can answer them
    return current().ops


def sync() -> tuple[Path, OpCatalog]:
    """Rebuild the cache file from the op database, whatever is there now (`torchcts sync-opinfo`)."""
    env = environment()
    path = cache_path(env)
    catalog = build()
    write_catalog(path, catalog)
    _LOADED.pop(path, None)
    return path, catalog


def check() -> tuple[Path, OpCatalog | None, str]:
    """(the cache file, its catalog if fresh, else None and why: "missing" or the problem); builds nothing."""
    env = environment()
    path = cache_path(env)
    catalog, why = _usable(path, env, installed_sources())
    return path, catalog, why
