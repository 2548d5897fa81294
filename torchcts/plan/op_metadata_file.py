"""The OpInfo metadata cache file: JSON, read as untrusted data, written atomically.

The file may come from another process, a half-finished write of an older TorchCTS, or a hand edit:
reading it never executes anything, refuses anything but a regular file of at most `MAX_BYTES`,
and validates every field, failing with `OpMetadataFileError` naming the file and the field
(`ops[12].answers[3]: a list of dtype names or null`). Writing goes through a unique temporary
file in the same folder renamed over the target, so concurrent builders (pytest-xdist workers,
CI shards) leave one complete file, never a mix.

Layout (docs/opinfo-cache.md): `format`, `schema_version`, `environment` (name -> string),
`claimable_dtypes` (the dtype names answers may use), `sources` (a list of {key, fingerprint}),
`ops` (a list of {name, variant_test_name, aten_name, aliases, answers}: `answers[i]` is the i-th
source's dtype names, or null where it does not apply) and `build_seconds`.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from torchcts import dtypes as dtype_names
from torchcts.plan.op_metadata_model import OpCatalog, OpMetadata

FORMAT = "torchcts-opinfo-metadata"
SCHEMA_VERSION = 1
MAX_BYTES = 16 * 1024 * 1024  # the file of torch 2.x is ~0.3 MB
MAX_NAME = 300  # characters of any name or key


class OpMetadataFileError(Exception):
    """A cache file that cannot be used: the message names the file, the field and what is allowed."""


def read_catalog(path: Path) -> OpCatalog:
    """The catalog in `path`; FileNotFoundError when there is none, OpMetadataFileError when it is not valid."""
    path = Path(path)
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # a missing cache is built, not reported
        raise FileNotFoundError(str(path)) from None
    except OSError as exc:
        raise OpMetadataFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise OpMetadataFileError(f"{path}: not a regular file")
    if info.st_size > MAX_BYTES:
        raise OpMetadataFileError(f"{path}: {info.st_size} bytes, over the {MAX_BYTES} byte limit of a cache file")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise OpMetadataFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise OpMetadataFileError(f"{path}: over the {MAX_BYTES} byte limit of a cache file")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise OpMetadataFileError(f"{path}: not valid JSON ({str(exc).splitlines()[0][:200]})") from None
    return _parse(data, path)


def _fail(path: Path, field: str, allowed: str, value: Any) -> OpMetadataFileError:
    shown = repr(value)
    return OpMetadataFileError(f"{path}: {field}: {allowed}, got {shown[:80]}{'...' if len(shown) > 80 else ''}")


def _name(value: Any, path: Path, field: str, empty: bool = False) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME or (not empty and not value):
        raise _fail(path, field, f"a {'' if empty else 'non-empty '}string of at most {MAX_NAME} characters", value)
    return value


def _list(value: Any, path: Path, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, field, "a list", value)
    return value


def _object(value: Any, path: Path, field: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, field, "an object", value)
    missing = [key for key in keys if key not in value]
    if missing:
        raise OpMetadataFileError(f"{path}: {field}: missing {', '.join(missing)}")
    return value


def _parse(data: Any, path: Path) -> OpCatalog:
    top = _object(data, path, "the file", ("format", "schema_version", "environment", "claimable_dtypes", "sources",
                                           "ops"))
    if top["format"] != FORMAT:
        raise _fail(path, "format", repr(FORMAT), top["format"])
    if top["schema_version"] != SCHEMA_VERSION or isinstance(top["schema_version"], bool):
        raise _fail(path, "schema_version", f"{SCHEMA_VERSION} (this TorchCTS's)", top["schema_version"])
    environment = _object(top["environment"], path, "environment", ())
    for key, value in environment.items():
        _name(key, path, "environment (a key)")
        _name(value, path, f"environment.{key}", empty=True)
    dtypes = [_name(d, path, f"claimable_dtypes[{i}]") for i, d in enumerate(_list(top["claimable_dtypes"], path,
                                                                                    "claimable_dtypes"))]
    if dtypes != dtype_names.claimable_names():
        raise OpMetadataFileError(f"{path}: claimable_dtypes: it was built for other claimable dtypes "
                                  f"({', '.join(dtypes)[:200]})")
    known = frozenset(dtypes)
    sources: dict[str, str] = {}
    for i, entry in enumerate(_list(top["sources"], path, "sources")):
        entry = _object(entry, path, f"sources[{i}]", ("key", "fingerprint"))
        key = _name(entry["key"], path, f"sources[{i}].key")
        if key in sources:
            raise _fail(path, f"sources[{i}].key", "a key not listed before", key)
        sources[key] = _name(entry["fingerprint"], path, f"sources[{i}].fingerprint")
    keys = list(sources)
    ops: list[OpMetadata] = []
    seen: set[str] = set()
    for i, entry in enumerate(_list(top["ops"], path, "ops")):
        ops.append(_op(entry, path, f"ops[{i}]", keys, known))
        if ops[-1].id in seen:
            raise _fail(path, f"ops[{i}]", "an OpInfo not listed before", ops[-1].id)
        seen.add(ops[-1].id)
    seconds = top.get("build_seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < 1e6:
        raise _fail(path, "build_seconds", "a number of seconds", seconds)
    return OpCatalog(dict(environment), sources, tuple(ops), float(seconds))


def _op(entry: Any, path: Path, field: str, keys: list[str], known: frozenset[str]) -> OpMetadata:
    entry = _object(entry, path, field, ("name", "variant_test_name", "aten_name", "aliases", "answers"))
    aliases = tuple(_name(a, path, f"{field}.aliases[{j}]")
                    for j, a in enumerate(_list(entry["aliases"], path, f"{field}.aliases")))
    answers_list = _list(entry["answers"], path, f"{field}.answers")
    if len(answers_list) != len(keys):
        raise _fail(path, f"{field}.answers", f"one entry per source ({len(keys)})", answers_list)
    answers: dict[str, tuple[str, ...] | None] = {}
    for key, (j, given) in zip(keys, enumerate(answers_list)):
        if given is None:
            answers[key] = None
            continue
        if not isinstance(given, list) or any(not isinstance(d, str) or d not in known for d in given) \
                or len(set(given)) != len(given):
            raise _fail(path, f"{field}.answers[{j}]", "a list of distinct claimable dtype names or null", given)
        answers[key] = tuple(given)
    return OpMetadata(_name(entry["name"], path, f"{field}.name"),
                      _name(entry["variant_test_name"], path, f"{field}.variant_test_name", empty=True),
                      _name(entry["aten_name"], path, f"{field}.aten_name"), aliases, answers)


def to_json(catalog: OpCatalog) -> str:
    """The file's text: one OpInfo a line, so a diff of two caches reads."""
    keys = list(catalog.sources)
    head = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "environment": dict(catalog.environment),
            "claimable_dtypes": dtype_names.claimable_names(),
            "sources": [{"key": key, "fingerprint": catalog.sources[key]} for key in keys],
            "build_seconds": round(catalog.seconds, 3)}
    ops = [json.dumps({"name": op.name, "variant_test_name": op.variant_test_name, "aten_name": op.aten_name,
                       "aliases": list(op.aliases), "answers": [_listed(op.answers[key]) for key in keys]},
                      separators=(",", ":")) for op in catalog.ops]
    text = json.dumps(head, indent=1)
    return text[:-2] + ',\n "ops": [\n' + ",\n".join(ops) + "\n ]\n}\n"


def _listed(answer: tuple[str, ...] | None) -> list[str] | None:
    return None if answer is None else list(answer)


def write_catalog(path: Path, catalog: OpCatalog) -> Path:
    """Write the catalog to `path` atomically (created folders included); OSError when it cannot be written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(to_json(catalog))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path
