"""The manifest schema: every key a manifest may hold, in one declarative table.

Each key states its type, default, meaning, what an error shows as allowed, what reads it (today,
or the issue whose suite will), and for scalar keys the kind that checks it. The model takes its
defaults from here, the parser its key checks (unknown, missing, removed keys) and scalar rules,
and docs/manifest.md its key tables: `render_tables()` writes them, and
tests/manifest/test_schema.py fails (printing the table to paste) when the doc holds anything else.
"""

from __future__ import annotations

import json

import attrs

from torchcts.manifest import kinds
from torchcts.manifest import vocabulary as vocab


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()  # the default of a key every manifest must hold


@attrs.frozen
class Key:
    """One manifest key. `default` is the model's value; `shown` spells it in the doc when that differs."""

    name: str
    type: str  # the doc's type column (markdown)
    default: object
    meaning: str  # the doc's meaning column (markdown)
    read_by: str  # what gives the key its effect; a later issue's suite, where that is still to come
    allowed: str | None = None  # plain text after "allowed:" in an error
    kind: kinds.Kind | None = None  # None: the parser has a dedicated function for the key
    field: str | None = None  # the model attribute, when it is not the key's name
    shown: str | None = None

    @property
    def attribute(self) -> str:
        return self.field or self.name

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def default_text(self) -> str:
        if self.shown is not None:
            return self.shown
        if self.required:
            return "required"
        return f"`{json.dumps(self.default) if isinstance(self.default, str) else repr(self.default)}`"


@attrs.frozen
class Section:
    """A dict-valued key whose own keys are fixed (`hardware`, `resource_limits`, `hypothesis`)."""

    name: str
    what: str  # "unknown <what>" for a key it does not have
    keys: tuple[Key, ...]


_INFORMATIONAL = "informational: validated and kept with the manifest; no suite sizes anything from it"

TOP_LEVEL: tuple[Key, ...] = (
    Key("manifest_version", "int", REQUIRED, "Format version; must be `1`.",
        "loading: any other version is rejected",
        allowed=f"the manifest format version; must be {vocab.MANIFEST_VERSION}"),
    Key("device_name", "str", REQUIRED,
        'Device type under test: `"cuda"`, `"mps"`, `"xpu"`, `"privateuseone"`, an out-of-tree name, optionally with '
        'an index (`"cuda:1"`), or `"auto"`; see [`device_name`](#device_name).',
        "`run`, `fuzz`: a warning when `--device` is another device type",
        allowed="'auto' or a device type such as 'cuda', 'mps', 'privateuseone', 'cuda:1'", kind=kinds.DEVICE),
    Key("backend_import", "str or None", None,
        "Dotted module imported before a run, to register an out-of-tree backend. `check-manifest` warns when it is "
        "not installed in the current environment; it never imports it.",
        "`run`, `fuzz`: imported before the run", allowed="e.g. 'torch_mydevice' or 'vendor.torch_backend'",
        kind=kinds.MODULE),
    Key("supported_dtypes", "dict", REQUIRED, "dtype → claim; see [Dtype claims](#dtype-claims). A regex claim is "
        "matched against the op name, or the scenario name for a scenario property's items.",
        "the plan (`dtype_not_supported`, ...) and the strategies", field="dtype_claims",
        allowed="dtype -> True, False, or a regex of op names the dtype is claimed for"),
    Key("device_count", "int ≥ 1", 1, "Devices available to multi-device tests.",
        "the `device_api` suite (the device must report this many) and `multi_device` (needs 2 or more)",
        allowed="a positive integer: devices available to multi-device tests", kind=kinds.integer(1)),
    Key("semantic_level", "int 1..8", 3,
        "The run depth: items of properties above it are not run; see [Semantic levels](#semantic-levels).",
        "the plan (`level_filtered`); the default depth, which `--level` replaces for one run (up or down)",
        allowed="1..8", kind=kinds.integer_range(1, 8)),
    Key("max_samples", "int ≥ 0", 10, "OpInfo samples per test item; `0` means no cap.",
        "the OpInfo sample strategy", allowed="a non-negative integer: OpInfo samples per item (0: no cap)",
        kind=kinds.integer(0)),
    Key("hardware", "dict", None, "The device's memory, for sizing tests; see [`hardware`](#hardware).",
        "see [`hardware`](#hardware)", allowed="a dict describing the device's memory", shown="see below"),
    Key("resource_limits", "dict", None,
        "Memory limits the harness keeps to; see [`resource_limits`](#resource_limits).",
        "see [`resource_limits`](#resource_limits)", allowed="a dict of memory limits the harness keeps to",
        shown="see below"),
    Key("capabilities", "dict", REQUIRED, "capability → `True`/`False`; see [Capabilities](#capabilities).",
        "the plan (`capability_not_declared`)", allowed="capability name -> bool (ieee754 also takes op-name regexes)"),
    Key("skip_ops", "list of str, or dict str → str", {},
        "Ops excluded from the run (OpInfo names, exact match); the dict form gives each a reason.",
        "the plan (`op_excluded`)", allowed="a list of op names, or a dict op name -> reason, excluded from the run",
        shown="`[]`"),
    Key("tolerance_overrides", "dict", {},
        "Per category and dtype tolerances; see [Tolerance overrides](#tolerance-overrides).",
        "the CPU-oracle comparison", allowed="'category:dtype' -> {'atol': x, 'rtol': y}", shown="`{}`"),
    Key("supported_container_formats", "dict str → bool, or list of str", frozenset(),
        "Packed quantized container formats the backend moves intact; see "
        "[Quantized containers](#quantized-containers).",
        "the quantized container suite (issue 20); validated today", field="container_formats",
        allowed="container format -> bool (or a list of supported formats)", shown="`{}`"),
    Key("custom_container_decoders", "dict str → str", {},
        'Format → `"module:function"` decoder for `custom_quantized_decode`.',
        "the custom decoder suite (issue 20); validated today",
        allowed="container format -> 'module:function' decoder path", shown="`{}`"),
    Key("autocast_policy", "dict str → str", {},
        "How `torch.autocast` on the device treats ops, where it differs from torch's published policy (CUDA's "
        "lists; CPU's for a CPU target); see [`autocast_policy`](#autocast_policy).",
        "the `autocast` suite (docs/suites/autocast.md)",
        allowed="op name -> 'lower_precision', 'float32', 'promote' or 'unchanged'", shown="`{}`"),
    Key("custom_test_dirs", "list of str", (),
        "Extra folders of property modules, relative to the manifest's folder; their properties are registered and "
        "run like the built-in ones. A folder that does not exist is a warning.",
        "the property registry; the pytest plugin collects them (`torchcts run` or any pytest front end)",
        allowed="a list of folders (relative to the manifest) with extra test modules", shown="`[]`"),
    Key("show_traceback", "bool", False,
        "A failing record's `error` carries the full traceback, not only its last line.",
        "`run`", allowed="True or False", kind=kinds.FLAG),
    Key("hypothesis", "dict", None, "Hypothesis settings for property runs; see [`hypothesis`](#hypothesis).",
        "see [`hypothesis`](#hypothesis)", allowed="Hypothesis settings for property runs", shown="see below"),
    Key("compile", "dict", None, "The `torch.compile` target: backend and settings; see [`compile`](#compile).",
        "see [`compile`](#compile)", allowed="torch.compile settings: backend, dynamic, mode, options, fullgraph",
        shown="see below"),
)

SECTIONS: tuple[Section, ...] = (
    Section("hardware", "hardware key", (
        Key("memory_model", '`"discrete"` or `"unified"`', "discrete",
            "Whether device memory is separate from host memory.", _INFORMATIONAL,
            kind=kinds.choice(vocab.MEMORY_MODELS, "memory model")),
        Key("device_memory_gb", '`"auto"` or list of positive numbers', None,
            "Memory per device; a list should have `device_count` entries.",
            "`guard_alloc` (an allocation beyond the device's memory must raise out-of-memory)",
            allowed="'auto' or a list of positive numbers, one per device", kind=kinds.AUTO_OR_POSITIVE_LIST,
            shown='`"auto"`'),
        Key("system_memory_gb", '`"auto"` or positive number', None, "Host memory.", _INFORMATIONAL,
            allowed="'auto' or a positive number", kind=kinds.AUTO_OR_POSITIVE, shown='`"auto"`'),
        Key("oom_recoverable", "bool", True, "Whether the device recovers from out-of-memory errors.",
            "`guard_alloc`: `False` leaves out its `reusable_after_oom` scenario (accounted, with the reason)",
            allowed="True or False", kind=kinds.FLAG),
    )),
    Section("resource_limits", "resource limit", (
        Key("max_device_memory_mb", "None or positive number", None, "Device memory the harness may use (MiB).",
            "`guard_alloc` (out-of-memory beyond it; what it allocates stays within a quarter of it), `stress` (its "
            "tensors within a fifth of it: the program's measured peak is 4x its tensor), the cleanup between items "
            "(the capacity it measures use against)",
            allowed="None or a positive number of MiB", kind=kinds.NONE_OR_POSITIVE),
        Key("max_system_memory_mb", "None or positive number", None, "Host memory the harness may use (MiB).",
            "`stress` (its tensors within 1/24 of it: a whole run's measured peak, program, CPU oracle and comparison, "
            "is 20-23x its tensor), "
            "`path-shapes run` (tiers whose worst peak exceeds it are left out unless named with `--tier`; no "
            "item past it is allocated)",
            allowed="None or a positive number of MiB", kind=kinds.NONE_OR_POSITIVE),
        Key("max_tensor_size_mb", "None or positive number", None, "Largest single tensor a test may build (MiB).",
            "`strategies.shapes_for` (element budget of drawn shapes); `stress` (its large tensors; set, it also "
            "lets a replay run stored cases past the default 64 MiB)",
            allowed="None or a positive number of MiB", kind=kinds.NONE_OR_POSITIVE),
        Key("cleanup_threshold_pct", "int 1..100", 80,
            "Memory use (percent) above which the harness frees caches between items.",
            "the engine after each item: at or above it (reserved memory over `max_device_memory_mb`, else the "
            "device's "
            "total memory) it collects garbage and calls `empty_cache()`, on devices that report `memory_reserved`",
            kind=kinds.integer_range(1, 100, show_allowed=False)),
    )),
    Section("hypothesis", "hypothesis setting", (
        Key("max_examples", "int ≥ 1", 100, "Examples per property item.",
            "`run`, unless `--max-examples` or a named profile sets it",
            allowed="a positive integer up to 1,000,000: examples per property item", kind=kinds.MAX_EXAMPLES_KIND),
        Key("deadline", "None or positive number", None,
            "Milliseconds one example may take; `None` disables the deadline.", "`run`, unless a named profile sets it",
            field="deadline_ms",
            allowed="None or a positive number of milliseconds per example, at most 86400000 (one day)",
            kind=kinds.DEADLINE),
        Key("derandomize", "bool", False,
            "Derive every case from the item id: identical cases on every run (release evidence).",
            "`run`, unless `--seed`, `--hypothesis-seed`, `--derandomize` or a named profile with `derandomize=True` "
            "says otherwise",
            allowed="a bool: derive every case from the item id (release runs)", kind=kinds.BOOL),
        Key("seed", "None or int ≥ 0", None,
            "The run's random seed; ignored (with a warning) when `derandomize` is `True`.",
            "`run`, when no flag or named profile sets the seed or derandomizes",
            allowed="None or a non-negative integer: the run's random seed", kind=kinds.SEED),
        Key("verbosity", '`"quiet"`, `"normal"`, `"verbose"` or `"debug"`', "normal",
            "How much Hypothesis reports while it draws and shrinks (to the item's pytest report).",
            "`run`, unless a named profile or `--hypothesis-verbosity` sets it",
            kind=kinds.choice(vocab.HYPOTHESIS_VERBOSITIES, "verbosity")),
        Key("print_blob", "bool", False,
            "Hypothesis prints a `@reproduce_failure` blob with a failure (the corpus case is TorchCTS's replay).",
            "`run`, unless a named profile sets it", allowed="True or False", kind=kinds.FLAG),
        Key("suppress_health_check", "list of str", (),
            "Hypothesis health checks to turn off, besides those TorchCTS always turns off (`too_slow`, "
            "`data_too_large`, `large_base_example`, `differing_executors`).",
            "`run`, joined with a named profile's",
            allowed=f"a list of Hypothesis health check names: {', '.join(vocab.HYPOTHESIS_HEALTH_CHECKS)}",
            kind=kinds.name_list(vocab.HYPOTHESIS_HEALTH_CHECKS, "health check name"), shown="`[]`"),
    )),
)

_COMPILE_READER = "`run`, `fuzz`, `replay`, `path-shapes run`, unless --compile names another backend"
SECTIONS += (
    Section("compile", "compile setting", (
        Key("backend", "None or str", None,
            "The `torch.compile` backend every op runs through on the device: a name `torch._dynamo` knows once "
            "`backend_import` ran, or `module.path:callable`; `None`: eager.",
            "`run`, `fuzz`, `replay`, `path-shapes run` when --compile is not given (--compile replaces it)",
            allowed="None, a registered backend name such as 'inductor' or 'openvino', or 'module.path:callable'",
            kind=kinds.COMPILE_BACKEND),
        Key("dynamic", "None or bool", None,
            "`torch.compile`'s `dynamic`: `False` is the static shape mode, `True` dynamic, `None` automatic "
            "(docs/compile.md).", _COMPILE_READER + " or --shape-mode sets the mode",
            allowed="True (dynamic shapes), False (static shapes) or None (automatic)", kind=kinds.TRISTATE),
        Key("mode", "None or str", None, "`torch.compile`'s `mode` (`default`, `reduce-overhead`, ...).",
            _COMPILE_READER, allowed="None or a torch.compile mode name", kind=kinds.COMPILE_MODE),
        Key("options", "dict str → scalar", (), "`torch.compile`'s `options`: backend settings (bools, numbers, "
            "strings).", _COMPILE_READER,
            allowed="a dict of at most 64 option names to bools, numbers, strings or None", kind=kinds.COMPILE_OPTIONS,
            shown="`{}`"),
        Key("fullgraph", "bool", False, "`torch.compile`'s `fullgraph`: a graph break is an error.", _COMPILE_READER,
            allowed="True or False", kind=kinds.FLAG),
    )),
)

# Keys earlier manifests held that no longer have an effect, with what to do instead.
REMOVED: dict[str, str] = {
    "max_samples_ieee754": "special values (NaN, inf, -0.0) are drawn by Hypothesis within each item's max_samples "
                           "samples; delete the key (to limit them to some ops, give capabilities.ieee754 an "
                           "op-name regex)",
    "ieee754_seed": "special values are placed by Hypothesis from the item's seed (--seed, --derandomize or "
                    "hypothesis.seed), which keeps derandomized runs reproducible; delete the key",
}

# Names people reach for that are not manifest keys, with the key they meant.
ALIASES: dict[str, str] = {
    "dtypes": "supported_dtypes",
    "level": "semantic_level",
    "device": "device_name",
    "device_type": "device_name",
    "skip": "skip_ops",
    "tolerances": "tolerance_overrides",
    "version": "manifest_version",
    "container_formats": "supported_container_formats",
}

KEYS: dict[str, Key] = {key.name: key for key in TOP_LEVEL}
SECTION_KEYS: dict[str, Section] = {section.name: section for section in SECTIONS}
REQUIRED_KEYS: tuple[str, ...] = tuple(key.name for key in TOP_LEVEL if key.required)


def key(path: str) -> Key:
    """The key at a dotted path: ``"device_count"``, ``"hypothesis.seed"``."""
    section, _, name = path.rpartition(".")
    if not section:
        return KEYS[name]
    return next(k for k in SECTION_KEYS[section].keys if k.name == name)


def default(path: str) -> object:
    """The model's default for the key at a dotted path."""
    return key(path).default


def allowed_texts(keys: tuple[Key, ...]) -> dict[str, str | None]:
    return {k.name: k.allowed for k in keys}


# -- the doc's key tables ----------------------------------------------------------------------------


def _table(keys: tuple[Key, ...]) -> str:
    rows = ["| key | type | default | meaning | read by |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{k.name}` | {k.type} | {k.default_text()} | {k.meaning} | {k.read_by} |" for k in keys]
    return "\n".join(rows)


def _removed_table() -> str:
    rows = ["| removed key | instead |", "| --- | --- |"]
    rows += [f"| `{name}` | {instead[0].upper()}{instead[1:]}. |" for name, instead in REMOVED.items()]
    return "\n".join(rows)


def render_tables() -> dict[str, str]:
    """Each key table of docs/manifest.md as markdown, by name: "keys", "removed", and one per section."""
    tables = {"keys": _table(TOP_LEVEL), "removed": _removed_table()}
    tables.update({section.name: _table(section.keys) for section in SECTIONS})
    return tables
