"""The property registry: every property declares, next to its check, what it proves and where its items come from.

A property suite is a module of `torchcts.properties.suites` (or a `test_*.py` file of a manifest's
`custom_test_dirs`) whose check functions are decorated with `@register_property(...)`: its name, the capability it
proves, its semantic level, its item source (`OpInfoItems`: one item per OpInfo, variant and
dtype; or `ScenarioItems`: named scenarios the suite defines itself, per dtype), and whether it
compares values. The plan, show-skips, the report's capability table, fuzz, replay and selftest
read the registry; adding a suite is adding a module, nothing else. The TorchCTS pytest plugin collects
the modules of `torchcts.properties.suites` (`plan.suites`), whatever their names; the check function is
named `test_<anything>` so pytest collects it from the module (`pytest --pyargs torchcts.properties`).

Loading imports the property modules (`load`); registration checks its arguments at once, so a
misdeclared property fails at import with a message naming it, never mid-run.
"""

from __future__ import annotations

import importlib
import importlib.util
import hashlib
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from torchcts.core.overload_names import IDENT, OVERLOAD_NAME  # noqa: F401  (OVERLOAD_NAME: re-exported)
from torchcts import dtypes as dtype_names
from torchcts.manifest.vocabulary import CAPABILITIES, CONTAINER_FORMATS
from torchcts.plan.suites import SUITES_PACKAGE, suite_modules  # noqa: F401  (SUITES_PACKAGE: re-exported)

CUSTOM_MODULE_PREFIX = "torchcts_custom_properties"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_OVERLOAD = re.compile(rf"^aten\.{IDENT}(\.{IDENT})?$")  # aten.<packet>[.<overload>]
COMPARISONS = ("tolerance", "bits")
FORMAT_CLAIMS = ("supported_container_formats", "custom_container_decoders")  # ScenarioItems.formats
ATTRIBUTE = "__torchcts_property__"  # set on a registered check function: its property's name


class RegistryError(Exception):
    """A property that cannot be registered or found: the message names it and what is wrong."""


class RegistryWarning(UserWarning):
    """A custom suite file that loads but registers no property (its checks are missing `@register_property`)."""


def _always(op: Any) -> bool:
    return True


def _cpu_dtypes(op: Any) -> Iterable[Any]:
    return op.supported_dtypes("cpu")


VARIANTS = ("function", "method", "inplace", "out")  # how an OpInfo item calls its op


def _check_variant(_: Any, __: Any, value: str) -> None:
    if value not in VARIANTS:
        raise RegistryError(f"OpInfoItems.variant: one of {', '.join(VARIANTS)}, got {value!r}")


@attrs.frozen
class OpInfoItems:
    """One item per (OpInfo, variant, dtype): every OpInfo `applies` accepts, in every dtype `dtypes(op)` gives."""

    variant: str = attrs.field(default="function", validator=_check_variant)
    applies: Callable[[Any], bool] = _always
    dtypes: Callable[[Any], Iterable[Any]] = _cpu_dtypes


def _names(field: str) -> Callable[[Any], tuple[Any, ...]]:
    def convert(value: Any) -> tuple[Any, ...]:
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise RegistryError(f"ScenarioItems.{field}: a list of names, got {value!r}")
        return tuple(value)

    return convert


@attrs.frozen
class ScenarioItems:
    """One item per (scenario, dtype): scenarios the suite defines itself ("round trip of a view").

    A scenario item's `op` field holds the scenario's name and its variant is `scenario`; the
    dtypes are names a manifest can claim (`float32`), each item in the order given."""

    scenarios: tuple[str, ...] = attrs.field(converter=_names("scenarios"))
    dtypes: tuple[str, ...] = attrs.field(converter=_names("dtypes"))
    # scenario -> its torch-only program (`torchcts.engine.programs`), for suites whose check runs one;
    # export writes the program's source into the reproduction script. Empty: not exportable.
    programs: Any = attrs.field(factory=dict, converter=lambda value: dict(value or {}), eq=False, hash=False)
    # how the check compares results: "tolerance" (the oracle's, per dtype) or "bits" (bit for bit: views,
    # copies, IEEE-754 semantics); an exported script compares the same way
    comparison: str = attrs.field(default="tolerance")
    # scenario -> a capability it needs besides the property's (the `dispatch` property's sparse overloads need
    # `sparse`); a manifest that does not declare it leaves the scenario out, accounted
    needs: Any = attrs.field(factory=dict, converter=lambda value: dict(value or {}), eq=False, hash=False)
    # "" or a manifest key naming container formats (FORMAT_CLAIMS): each scenario is a format, run only where that
    # key names it (the quantized container suites: one item per format a manifest claims)
    formats: str = attrs.field(default="")
    # scenario -> `cases.bounds.CaseParams`: the bounds of every value its cases store (or one CaseParams for all
    # scenarios). The case reader refuses a stored case outside them, and the engine checks every drawn case against
    # them, so a suite's strategy and its declared bounds cannot drift apart; a scenario without them cannot replay.
    params: Any = attrs.field(factory=dict, eq=False, hash=False)

    @scenarios.validator
    def _check_scenarios(self, _: Any, value: tuple[str, ...]) -> None:
        bad = [s for s in value if not isinstance(s, str) or not _NAME.match(s)]
        if not value or bad or len(set(value)) != len(value):
            raise RegistryError(f"ScenarioItems.scenarios: distinct lower_snake_case names, at least one, "
                                f"got {value!r}")

    @dtypes.validator
    def _check_dtypes(self, _: Any, value: tuple[str, ...]) -> None:
        found = [dtype_names.lookup(d) if isinstance(d, str) else None for d in value]
        if not value or any(d not in dtype_names.CLAIMABLE_DTYPES for d in found) or len(set(found)) != len(found):
            raise RegistryError(f"ScenarioItems.dtypes: distinct names of dtypes a manifest can claim (float32, "
                                f"bfloat16, ...), at least one, got {value!r}")

    @comparison.validator
    def _check_comparison(self, _: Any, value: str) -> None:
        if value not in COMPARISONS:
            raise RegistryError(f"ScenarioItems.comparison: one of {', '.join(COMPARISONS)}, got {value!r}")

    @needs.validator
    def _check_needs(self, _: Any, value: dict[str, Any]) -> None:
        bad = {name: need for name, need in value.items() if name not in self.scenarios or need not in CAPABILITIES}
        if bad:
            raise RegistryError(f"ScenarioItems.needs: scenario name -> a capability name; not valid: {bad}")

    @formats.validator
    def _check_formats(self, _: Any, value: str) -> None:
        if value and value not in FORMAT_CLAIMS:
            raise RegistryError(f"ScenarioItems.formats: '' or one of {', '.join(FORMAT_CLAIMS)}, got {value!r}")
        stray = [name for name in self.scenarios if value and name not in CONTAINER_FORMATS]
        if stray:
            raise RegistryError(f"ScenarioItems.formats: every scenario must be a container format; not: {stray}")

    @params.validator
    def _check_params(self, _: Any, value: Any) -> None:
        from torchcts.cases.bounds import CaseParams, params_for  # the plan stage loads no cases package until then

        try:
            table = params_for(self.scenarios, value)
        except (TypeError, ValueError):
            table = None
        bad = None if table is None else [n for n, p in table.items() if n not in self.scenarios
                                           or not isinstance(p, CaseParams)]
        if table is None or bad:
            raise RegistryError(f"ScenarioItems.params: a CaseParams, or scenario name -> CaseParams; not valid: "
                                f"{bad if bad else value!r}")

    def case_params(self, scenario: str) -> Any:
        """The declared bounds of `scenario`'s stored values (`cases.bounds.CaseParams`), or None."""
        from torchcts.cases.bounds import params_for  # the plan stage loads no cases package until then

        return params_for(self.scenarios, self.params).get(scenario)

    @programs.validator
    def _check_programs(self, _: Any, value: dict[str, Any]) -> None:
        stray = [name for name in value if name not in self.scenarios]
        bad = [name for name, program in value.items() if not callable(program)]
        if stray or bad:
            raise RegistryError(f"ScenarioItems.programs: a callable per scenario name; not scenarios: {stray}, "
                                f"not callable: {bad}")


@attrs.frozen
class PropertySpec:
    """A registered property: what it proves, at which level, over which items, and its check."""

    name: str
    capability: str
    level: int
    items: OpInfoItems | ScenarioItems
    check: Callable[[Any], None]
    compares_values: bool = True
    also_proves: tuple[str, ...] = ()  # capabilities its cases also exercise (special values: ieee754)
    draws: bool = True  # False: a fixed list of cases (OpInfo error inputs); one visit of fuzz says everything
    module: str = ""
    # aten overloads ("aten.add.Tensor") or packets ("aten.add") a hand-authored suite exercises (the coverage audit)
    overloads: tuple[str, ...] = ()

    @property
    def variant(self) -> str:
        return self.items.variant if isinstance(self.items, OpInfoItems) else "scenario"

    @property
    def scenario(self) -> bool:
        return isinstance(self.items, ScenarioItems)

    def tests(self, capabilities: Iterable[str]) -> bool:
        """Whether it tests one of `capabilities`: its own, or one it also proves (`forward` also tests ieee754);
        what `show-skips --capability` and `run --capability` select by."""
        wanted = set(capabilities)
        return self.capability in wanted or bool(wanted & set(self.also_proves))


_REGISTRY: dict[str, PropertySpec] = {}
_INSTALLED_LOADED = False  # the modules of torchcts.properties are imported (once per process)


def register_property(name: str, *, capability: str, level: int, items: OpInfoItems | ScenarioItems = OpInfoItems(),
                      compares_values: bool = True, also_proves: Iterable[str] = (),
                      draws: bool = True, overloads: Iterable[str] = ()) -> Callable[[Callable], Callable]:
    """Decorator: register the check function as property `name`; returns the function unchanged.

    `overloads` names the aten overloads ("aten.add.Tensor") or packets ("aten.add") the suite
    exercises, for the coverage audit (docs/coverage/audit.md)."""
    also = tuple(also_proves)
    if isinstance(overloads, str) or not isinstance(overloads, Iterable):
        raise RegistryError(f"property {name}: overloads must be a list of names like 'aten.add.Tensor' or "
                            f"'aten.add', got {overloads!r}")
    declared = tuple(overloads)
    bad = [o for o in declared if not isinstance(o, str) or not _OVERLOAD.match(o)]
    if bad:
        raise RegistryError(f"property {name}: overloads must be 'aten.<packet>' or 'aten.<packet>.<overload>', "
                            f"got {bad[0]!r}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistryError(f"property name {name!r}: lower_snake_case, starting with a letter")
    for field, value in [("capability", capability)] + [("also_proves", c) for c in also]:
        if value not in CAPABILITIES:
            raise RegistryError(f"property {name}: {field} {value!r} is not a manifest capability; "
                                f"known: {', '.join(CAPABILITIES)}")
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 8:
        raise RegistryError(f"property {name}: level must be an integer from 1 to 8, got {level!r}")
    if not isinstance(items, (OpInfoItems, ScenarioItems)):
        raise RegistryError(f"property {name}: items must be OpInfoItems(...) or ScenarioItems(...), got {items!r}")

    def decorate(function: Callable) -> Callable:
        if not callable(function) or not getattr(function, "__name__", "").startswith("test_"):
            raise RegistryError(f"property {name}: the check must be a function named test_..., so pytest collects it")
        spec = PropertySpec(name, capability, level, items, function, bool(compares_values), also, bool(draws),
                            getattr(function, "__module__", ""), declared)
        known = _REGISTRY.get(name)
        if known is not None and _origin(known.check) != _origin(function):
            raise RegistryError(f"property {name} is registered twice: {_origin(known.check)} and {_origin(function)}")
        _REGISTRY[name] = spec  # the same function imported again (pytest's importlib mode) replaces itself
        setattr(function, ATTRIBUTE, name)
        return function

    return decorate


def _origin(function: Callable) -> str:
    """Where a check is defined: its file and name (one file imported under two module names is one origin)."""
    code = getattr(function, "__code__", None)
    return f"{code.co_filename if code else '?'}:{getattr(function, '__qualname__', '?')}"


def load(extra_dirs: Iterable[Path | str] = ()) -> tuple[PropertySpec, ...]:
    """Import every suite module (`suite_modules`) and the suite files (`test_*.py`, `*_test.py`, the
    files pytest collects) of the extra folders; their properties, by level then name.

    Properties of custom folders loaded earlier in this process but not named now are left out, so
    a plan sees the installed suites and its own manifest's `custom_test_dirs`, nothing else."""
    global _INSTALLED_LOADED
    if not _INSTALLED_LOADED:
        for name in suite_modules():
            importlib.import_module(name)
        _INSTALLED_LOADED = True
    tags = set()
    for folder in extra_dirs:
        tag = _folder_tag(Path(folder))
        tags.add(tag)
        for path in sorted({*Path(folder).glob("test_*.py"), *Path(folder).glob("*_test.py")}):
            _import_file(path, tag)
    prefix = f"{CUSTOM_MODULE_PREFIX}.d"
    return tuple(p for p in properties()
                 if not p.module.startswith(prefix) or p.module[len(prefix):].split(".")[0] in tags)


def _folder_tag(folder: Path) -> str:
    return hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]


def _import_file(path: Path, tag: str) -> None:
    """Import a custom property module by path, under a name unique to its folder (two folders may share file names).

    A module that fails half-way leaves nothing behind (neither itself nor the properties it registered
    before failing); one that registers no property is imported with one `RegistryWarning`."""
    name = f"{CUSTOM_MODULE_PREFIX}.d{tag}.{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"{path}: not an importable Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # a custom suite the user wrote: one line naming it (interrupts propagate)
        sys.modules.pop(name, None)
        for dropped in [p.name for p in _REGISTRY.values() if p.module == name]:
            del _REGISTRY[dropped]
        if isinstance(exc, RegistryError):
            raise RegistryError(f"{path}: {exc}") from None
        if isinstance(exc, SystemExit):
            raise RegistryError(f"{path}: importing it called sys.exit({exc.code!r})") from None
        if not isinstance(exc, Exception):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise RegistryError(f"{path}: importing it raised {type(exc).__name__}: {first}") from exc
    if not any(p.module == name for p in _REGISTRY.values()):
        warnings.warn(f"{path}: a suite file of custom_test_dirs that registers no property (decorate its checks "
                      f"with @register_property)", RegistryWarning, stacklevel=2)


def properties() -> tuple[PropertySpec, ...]:
    """The registered properties (of the modules imported so far), by level then name."""
    return tuple(sorted(_REGISTRY.values(), key=lambda p: (p.level, p.name)))


def names() -> tuple[str, ...]:
    """The registered property names, by level then name (`--property` choices)."""
    return tuple(p.name for p in properties())


def get(name: str) -> PropertySpec:
    """The property registered as `name`; the installed suites are loaded first if they are not yet."""
    spec = _REGISTRY.get(name)
    if spec is None and not _INSTALLED_LOADED:
        load()
        spec = _REGISTRY.get(name)
    if spec is None:
        raise RegistryError(f"no property {name!r} is registered; known: {', '.join(p.name for p in properties())}")
    return spec


def property_of(function: Callable) -> PropertySpec | None:
    """The property a check function was registered as, or None (an unregistered test function)."""
    name = getattr(function, ATTRIBUTE, None)
    return _REGISTRY.get(name) if isinstance(name, str) else None


def capability_map() -> dict[str, str]:
    """property name -> the capability it proves (what the report's capability table reads)."""
    return {p.name: p.capability for p in properties()}


def testing(capabilities: Iterable[str]) -> tuple[str, ...]:
    """The names of the registered properties that test one of `capabilities` (`PropertySpec.tests`)."""
    wanted = tuple(capabilities)
    return tuple(p.name for p in properties() if p.tests(wanted))


def also_proves_map() -> dict[str, list[str]]:
    """capability -> the properties that also exercise it besides their own capability."""
    result: dict[str, list[str]] = {}
    for p in properties():
        for capability in p.also_proves:
            result.setdefault(capability, []).append(p.name)
    return result
