"""Corpus cases: one JSON file per minimal counterexample, named by its fingerprint.

A case says which property, op, variant and dtype failed on which device (and which
`backend_import` module registered it), how it was found, the exact inputs (`case_codec`), the
failure observed, and whether it is `open` or `fixed`. The fingerprint covers the property and the
exact inputs, so two failures that shrink to the same case are one file. Loading never unpickles or
executes anything and is bounded (`CaseLimits`: file size, JSON values and nesting, bytes decoded);
a malformed or oversized file raises `CaseFileError` naming the file and the field. docs/corpus.md
documents the format.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import keyword
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterable

import attrs

import torchcts.corpus
from torchcts.cases import scenario_case
from torchcts.cases.codec import CodecError, Decoder, Encoder, brief
from torchcts.core.case_limits import CaseLimits, json_depth_problem, json_values_upper_bound, size_text
from torchcts.core.compile_settings import backend_spelling_problem, settings_problem
from torchcts.disk import write_atomic

SCHEMA_VERSION = 1
STATUSES = ("open", "fixed")
# a `backend_import` module name as a case may carry it: ASCII identifiers joined by dots, nothing else
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_MODULE_NAME_CHARS = 200
_REQUIRED = ("schema_version", "fingerprint", "property", "op", "variant", "dtype", "device_type", "found",
             "inputs", "storages", "failure", "status")


class CaseFileError(Exception):
    """A case file that cannot be read: which file, which field, what is wrong."""

    def __init__(self, path: Path | str, field: str, message: str):
        field, message = printable(field), printable(message)  # names and values from the file: one line
        super().__init__(f"{printable(str(path))}: {field}: {message}")
        self.path, self.field, self.message = Path(path), field, message


def printable(text: str) -> str:
    """`text` with control characters (newlines, terminal escapes) written as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


@attrs.frozen
class CorpusCase:
    fingerprint: str
    property: str
    op: str
    variant: str
    dtype: str
    device_type: str
    backend: str | None
    found: dict[str, Any]
    # encoded: {"input", "args", "kwargs"} (+ "error_type", "error_regex" for errors); a scenario case's named
    # parameters {"scenario": {"input", <name>: value, ...}} (`positional_inputs` gives either as the first form)
    inputs: dict[str, Any]
    storages: list[dict[str, Any]]
    failure: dict[str, Any]
    status: str = "open"
    description: str = ""
    backend_import: str | None = None  # the manifest's module that registered the device (None: none, or not recorded)
    # how `backend` compiled it: {shape_mode, mode, options, fullgraph} (None: eager, or a case older than shape modes)
    compile: dict[str, Any] | None = None
    path: Path | None = attrs.field(default=None, eq=False)

    @property
    def shape_mode(self) -> str | None:
        """The shape mode the case failed in (`core.compile_settings.SHAPE_MODES`); None for an eager case. A compile case
        stored before shape modes were recorded ran in torch's default, `automatic`."""
        if self.backend is None:
            return None
        return (self.compile or {}).get("shape_mode") or "automatic"

    @property
    def fullgraph(self) -> bool:
        return bool((self.compile or {}).get("fullgraph"))

    @property
    def short_id(self) -> str:
        return self.fingerprint[:16]

    def as_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        del data["path"]
        if data["compile"] is None:  # an eager case's file stays as it was before compile settings were stored
            del data["compile"]
        return {"schema_version": SCHEMA_VERSION, **data}

    def positional_inputs(self) -> dict[str, Any]:
        """The inputs as {input, args, kwargs}, each still encoded: a scenario case's named parameters (`"inputs":
        {"scenario": {name: value}}`) in its suite's declared order (`cases.scenario_case`), other cases' as stored
        (a scenario case stored before its parameters were named, too: its args are the declared names in order)."""
        named = self.inputs.get("scenario")
        if named is None:
            return self.inputs
        where = self.path or self.short_id
        if not isinstance(named, dict):
            raise CaseFileError(where, "inputs.scenario", f"expected an object of named parameters, got {brief(named)}")
        result = scenario_case.positional_inputs(_declared_params(self, where), named)
        if isinstance(result, tuple):
            raise CaseFileError(where, *result)
        return {**{key: value for key, value in self.inputs.items() if key != "scenario"}, **result}

    def sample(self, limits: CaseLimits = CaseLimits()) -> Any:
        """The inputs rebuilt exactly, as an OpInfo SampleInput on CPU, within `limits`."""
        from torch.testing._internal.opinfo.core import SampleInput

        decoder = Decoder(self.storages, limits=limits)
        inputs = self.positional_inputs()
        try:
            kwargs = decoder.value(inputs.get("kwargs", {"dict": {}}), "inputs.kwargs")
            args = decoder.value(inputs.get("args", []), "inputs.args")
            value = decoder.value(inputs["input"], "inputs.input")
        except CodecError as exc:
            raise CaseFileError(self.path or self.short_id, exc.field, exc.message) from None
        except KeyError:
            raise CaseFileError(self.path or self.short_id, "inputs.input", "missing") from None
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise CaseFileError(self.path or self.short_id, "inputs", "args must be a list and kwargs a dict")
        return SampleInput(value, args=tuple(args), kwargs=kwargs)

    def with_status(self, status: str) -> "CorpusCase":
        return attrs.evolve(self, status=status)


def _declared_params(case: CorpusCase, where: Path | str) -> Any:
    """The `CaseParams` a named scenario case's suite declares; CaseFileError when there are none."""
    from torchcts.plan import registry  # the suites, loaded only to read a named case (readers of run folders never)

    try:
        spec = registry.get(case.property)
    except registry.RegistryError:
        raise CaseFileError(where, "property", f"{brief(case.property)}: no such property is registered") from None
    params = spec.items.case_params(case.op) if spec.scenario else None
    if params is None:
        raise CaseFileError(where, "inputs.scenario", f"{case.property} declares no named parameters for "
                                                      f"{brief(case.op)} (ScenarioItems.params)")
    return params


def new_case(*, prop: str, op: str, variant: str, dtype: str, device_type: str, backend: str | None,
             sample: Any, failure: dict[str, Any], found: dict[str, Any], description: str = "",
             error_input: tuple[str, str] | None = None, backend_import: str | None = None,
             compile: dict[str, Any] | None = None, scenario_params: Any = None) -> CorpusCase:
    """A case for a failing sample; raises CodecError if an input cannot be stored exactly. A scenario case whose
    suite declares its parameters (`scenario_params`, a `CaseParams`) is stored by name; its fingerprint is that of
    the positional form, so the same case stored before and after parameters were named is one file."""
    encoder = Encoder()
    inputs = {"input": encoder.value(sample.input, "inputs.input"),
              "args": encoder.value(list(sample.args), "inputs.args"),
              "kwargs": encoder.value(dict(sample.kwargs), "inputs.kwargs")}
    if error_input is not None:
        inputs["error_type"], inputs["error_regex"] = error_input
    identity = json.dumps([prop, op, variant, dtype, inputs, encoder.storages], sort_keys=True)
    if scenario_params is not None and scenario_case.has_names(scenario_params, sample):
        inputs = {"scenario": scenario_case.named_inputs(scenario_params, inputs)}
    fingerprint = hashlib.sha256(identity.encode()).hexdigest()
    found = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **found}
    settings = None if compile is None else {k: v for k, v in compile.items() if k != "backend"}
    return CorpusCase(fingerprint, prop, op, variant, dtype, device_type, backend, found, inputs,
                      encoder.storages, failure, "open", description, backend_import, settings)


def case_path(directory: Path | str, case: CorpusCase) -> Path:
    return Path(directory) / f"{case.fingerprint[:24]}.json"


def write_case(directory: Path | str, case: CorpusCase) -> tuple[Path, bool]:
    """Write a case unless one with its fingerprint exists; (its path, whether it is new)."""
    path = case_path(directory, case)
    if path.exists():
        return path, False
    save_case(path, case)
    return path, True


def save_case(path: Path, case: CorpusCase) -> None:
    """Write (or rewrite) a case file atomically: a crash or a full disk leaves the old file or the new one
    (WriteError names the file)."""
    write_atomic(path, json.dumps(case.as_json(), indent=1, sort_keys=True) + "\n")  # WriteError: a full disk


def load_case(path: Path | str, limits: CaseLimits = CaseLimits()) -> CorpusCase:
    """The case in a file, its fields checked; its inputs are decoded later, by `CorpusCase.sample`."""
    path = Path(path)
    data = _parse(path, _read(path, limits), limits)
    if not isinstance(data, dict):
        raise CaseFileError(path, "(file)", "expected a JSON object")
    for field in _REQUIRED:
        if field not in data:
            raise CaseFileError(path, field, "missing")
    if data["schema_version"] != SCHEMA_VERSION:
        raise CaseFileError(path, "schema_version", f"{brief(data['schema_version'])}; this TorchCTS reads "
                                                    f"{SCHEMA_VERSION}")
    for field in ("fingerprint", "property", "op", "variant", "dtype", "device_type"):
        if not isinstance(data[field], str) or not data[field]:
            raise CaseFileError(path, field, f"expected a non-empty string, got {brief(data[field])}")
    for field in ("found", "inputs", "failure"):
        if not isinstance(data[field], dict):
            raise CaseFileError(path, field, f"expected an object, got {type(data[field]).__name__}")
    if not isinstance(data["storages"], list):
        raise CaseFileError(path, "storages", "expected a list")
    if data["status"] not in STATUSES:
        raise CaseFileError(path, "status", f"{brief(data['status'])}; allowed: {', '.join(STATUSES)}")
    backend_import = data.get("backend_import")  # optional: older cases have none
    problem = None if backend_import is None else module_name_problem(backend_import)
    if problem is not None:
        raise CaseFileError(path, "backend_import", problem)
    backend, settings = data.get("backend"), data.get("compile")
    problem = None if backend is None else _backend_problem(backend)
    if problem is not None:
        raise CaseFileError(path, "backend", problem)
    problem = None if settings is None else settings_problem(settings)
    if problem is None and settings is not None and (backend is None or "backend" in settings):
        problem = "compile settings belong to a case with a backend, and name no backend of their own"
    if problem is not None:
        raise CaseFileError(path, "compile", problem)
    return CorpusCase(data["fingerprint"], data["property"], data["op"], data["variant"], data["dtype"],
                      data["device_type"], backend, data["found"], data["inputs"], data["storages"],
                      data["failure"], data["status"], str(data.get("description", "")), backend_import,
                      settings, path)


def _backend_problem(backend: object) -> str | None:
    """Why a case's `backend` cannot name a compile backend: a `module:callable` one's module is held to the rules of
    a `backend_import` name (an exported script imports it)."""
    problem = backend_spelling_problem(backend)
    if problem is not None:
        return f"{brief(backend)} is not {problem}"
    return module_name_problem(backend.partition(":")[0]) if ":" in backend else None


def module_name_problem(name: object) -> str | None:
    """What makes `name` no importable module name (None: it is one): ASCII identifiers, not keywords,
    joined by dots, at most 200 characters. A case file is untrusted: its module name reaches a script."""
    if not isinstance(name, str) or len(name) > _MODULE_NAME_CHARS or not _MODULE_NAME.fullmatch(name) or any(
            keyword.iskeyword(part) or part.startswith("__") for part in name.split(".")):
        return (f"{brief(name)} is not a module name (dotted ASCII identifiers, none a keyword or starting with "
                f"'__' such as __main__, like torch_mydevice or vendor.torch_backend, at most {_MODULE_NAME_CHARS} "
                "characters)")
    return None


def _read(path: Path, limits: CaseLimits) -> bytes:
    """The file's bytes, refused before reading when it is not a regular file or is too large."""
    try:  # a FIFO or a device named *.json must not block or stream forever: non-blocking open, then fstat
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # a directory too: fdopen would raise and leak the descriptor
            os.close(fd)
            raise CaseFileError(path, "(file)", "not a regular file")
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(limits.max_file_bytes + 1) if info.st_size <= limits.max_file_bytes else b""
    except OSError as exc:
        raise CaseFileError(path, "(file)", f"cannot read: {exc.strerror or exc}") from None
    size = max(info.st_size, len(text))  # it may have grown while being read
    if size > limits.max_file_bytes:
        raise CaseFileError(path, "(file)", f"{size_text(size)}; a case file may have at most "
                                            f"{limits.max_file_bytes} bytes (2 x {limits.option()} + 1 MiB)")
    return text


def _parse(path: Path, text: bytes, limits: CaseLimits) -> Any:
    """JSON within the value count and nesting depth of `limits` (Python's parser recurses per level)."""
    values = json_values_upper_bound(text)
    if values > limits.max_json_values:
        raise CaseFileError(path, "(file)", f"up to {values} JSON values; a case may have at most "
                                            f"{limits.max_json_values} ({limits.option()} / 256)")
    try:
        data = json.loads(text)
    except RecursionError:
        raise CaseFileError(path, "(file)", f"JSON nested deeper than {limits.max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise CaseFileError(path, "(file)", f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:  # JSONDecodeError, and integers of more than 4300 digits
        raise CaseFileError(path, "(file)", f"not JSON (truncated?): {str(exc)[:200]}") from None
    deep = json_depth_problem(data, limits.max_depth)
    if deep is not None:
        raise CaseFileError(path, deep[0], f"JSON nested deeper than {limits.max_depth} levels")
    return data


def case_files(paths: Iterable[Path | str]) -> list[Path]:
    """The case files named, or found (sorted, recursively, not following links to folders) in the folders named."""
    files: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            files.extend(sorted(p for p in entry.rglob("*.json") if not p.name.startswith(".") and not p.is_dir()))
        else:
            files.append(entry)
    return files


def builtin_corpus() -> Path:
    """The curated corpus shipped with TorchCTS (`torchcts.corpus`)."""
    return Path(torchcts.corpus.__file__).parent


def builtin_cases(compile_backend: str | None) -> list[Path]:
    """The curated cases found on `compile_backend` (None: eager backends): a case found under
    torch.compile(backend=B) is wrong only there, so only a replay under the same backend can fail it."""
    return [path for path in case_files([builtin_corpus()]) if load_case(path).backend == compile_backend]
