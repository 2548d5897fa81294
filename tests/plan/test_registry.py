"""The property registry: every installed property is registered with what it proves, declarations are
checked when they are made, and custom folders load one file at a time with the file named."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import warnings

import pytest

from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.plan import registry
from torchcts.plan.registry import OpInfoItems, RegistryError, RegistryWarning, ScenarioItems, register_property


@pytest.fixture
def fresh_registry(monkeypatch):
    """The installed properties, in a registry copy this test may add to (restored afterwards)."""
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def _property_functions():
    for name in registry.suite_modules():
        module = importlib.import_module(name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("test_") and function.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", function


def test_every_property_function_of_the_installed_suites_is_registered():
    registry.load()
    functions = dict(_property_functions())
    assert functions
    unregistered = [name for name, function in functions.items() if registry.property_of(function) is None]
    assert not unregistered, f"test functions without @register_property: {unregistered}"


def test_every_registered_property_proves_manifest_capabilities():
    # That run.json's property map and the report's capability table name every registered property
    # (custom ones too) is checked on a real session: tests/engine/test_manifest_keys.py.
    specs = registry.load()
    assert all(spec.capability in CAPABILITIES for spec in specs)
    assert all(c in CAPABILITIES for spec in specs for c in spec.also_proves)


def test_the_installed_properties_declare_what_they_prove():
    registry.load()
    declared = {name: (spec.capability, spec.level, spec.variant, spec.compares_values, spec.draws)
                for name in ("forward", "layout", "errors", "inplace", "out", "backward")
                for spec in [registry.get(name)]}
    assert declared == {
        "forward": ("inference", 1, "function", True, True),
        "layout": ("inference", 2, "function", True, True),
        "errors": ("inference", 2, "function", False, False),
        "inplace": ("inference", 3, "inplace", True, True),
        "out": ("inference", 3, "out", True, True),
        "backward": ("training", 4, "function", True, True),
    }
    assert registry.also_proves_map() == {"ieee754": ["forward", "foreach", "foreach_floating", "inplace", "out",
                                                      "backward"]}  # the foreach suite draws special values too


def _check(cts):  # a check function body for the declarations below
    pass


@pytest.mark.parametrize(("name", "declaration", "message"), [
    ("Bad-Name", {}, "property name 'Bad-Name': lower_snake_case"),
    ("telepathic", {"capability": "telepathy"}, "property telepathic: capability 'telepathy' is not a manifest"),
    ("levelled", {"level": 0}, "property levelled: level must be an integer from 1 to 8, got 0"),
    ("levelled", {"level": 9}, "property levelled: level must be an integer from 1 to 8, got 9"),
    ("levelled", {"level": True}, "property levelled: level must be an integer from 1 to 8, got True"),
    ("sourced", {"items": ["abs"]}, "property sourced: items must be OpInfoItems(...) or ScenarioItems(...)"),
    ("proving", {"also_proves": ("nothing",)}, "property proving: also_proves 'nothing' is not a manifest"),
    ("declaring", {"overloads": "aten.add"}, "property declaring: overloads must be a list of names"),
    ("declaring", {"overloads": ["add.Tensor"]}, "property declaring: overloads must be 'aten.<packet>' or"),
    ("declaring", {"overloads": ["aten.add.Tensor.x"]}, "property declaring: overloads must be 'aten.<packet>'"),
])
def test_a_bad_declaration_raises_naming_the_property(fresh_registry, name, declaration, message):
    arguments = {"capability": "inference", "level": 1, **declaration}
    with pytest.raises(RegistryError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        register_property(name, **arguments)(_check)
    assert name not in registry.capability_map()


def test_a_suite_declares_the_overloads_it_exercises(fresh_registry):
    def test_declared(cts):
        pass

    register_property("declared", capability="inference", level=1,
                      overloads=["aten.add.Tensor", "aten.abs"])(test_declared)
    assert registry.get("declared").overloads == ("aten.add.Tensor", "aten.abs")
    assert registry.get("forward").overloads == ()  # an OpInfo property maps by its OpInfos, not declarations


def test_a_check_not_named_test_is_refused(fresh_registry):
    def check_it(cts):
        pass

    with pytest.raises(RegistryError, match="property hidden: the check must be a function named test_"):
        register_property("hidden", capability="inference", level=1)(check_it)


@pytest.mark.parametrize(("items", "message"), [
    (lambda: ScenarioItems([], ["float32"]), "ScenarioItems.scenarios: distinct lower_snake_case names, at least one"),
    (lambda: ScenarioItems(["Round Trip"], ["float32"]), "ScenarioItems.scenarios: distinct lower_snake_case"),
    (lambda: ScenarioItems(["a", "a"], ["float32"]), "ScenarioItems.scenarios: distinct lower_snake_case"),
    (lambda: ScenarioItems("round_trip", ["float32"]), "ScenarioItems.scenarios: a list of names, got 'round_trip'"),
    (lambda: ScenarioItems(["round_trip"], "float32"), "ScenarioItems.dtypes: a list of names, got 'float32'"),
    (lambda: ScenarioItems(["round_trip"], ["float31"]), "ScenarioItems.dtypes: distinct names of dtypes a manifest"),
    (lambda: ScenarioItems(["round_trip"], ["float32", "torch.float32"]), "ScenarioItems.dtypes: distinct names"),
    (lambda: ScenarioItems(["round_trip"], []), "ScenarioItems.dtypes: distinct names of dtypes a manifest can claim"),
    (lambda: OpInfoItems(variant="scenario"), "OpInfoItems.variant: one of function, method, inplace, out, got 'sc"),
    (lambda: ScenarioItems(["nf4"], ["uint8"], formats="container_formats"), "ScenarioItems.formats: '' or one of"),
    (lambda: ScenarioItems(["nf4", "round_trip"], ["uint8"], formats="supported_container_formats"),
     r"every scenario must be a container format; not: \['round_trip'\]"),
])
def test_a_bad_scenario_source_raises(items, message):
    with pytest.raises(RegistryError, match=message):
        items()


def test_a_second_function_under_a_registered_name_is_refused(fresh_registry):
    def test_first(cts):
        pass

    def test_second(cts):
        pass

    register_property("twice", capability="inference", level=1)(test_first)
    register_property("twice", capability="inference", level=1)(test_first)  # the same function again: fine
    with pytest.raises(RegistryError, match=r"property twice is registered twice: .*test_first and .*test_second"):
        register_property("twice", capability="inference", level=1)(test_second)
    with pytest.raises(RegistryError, match="property forward is registered twice"):
        register_property("forward", capability="inference", level=1)(test_second)
    assert registry.get("twice").check is test_first and registry.property_of(test_first).name == "twice"
    assert registry.property_of(_check) is None


def test_get_names_the_known_properties():
    registry.load()
    with pytest.raises(RegistryError, match="no property 'nope' is registered; known: forward, "):
        registry.get("nope")


SUITE = '''
from torchcts.plan.registry import ScenarioItems, register_property

@register_property("{name}", capability="inference", level=2, items=ScenarioItems(["{name}_case"], ["float32"]))
def test_{name}(cts):
    pass
'''


def test_load_imports_the_suite_files_of_a_custom_folder(fresh_registry, tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE.format(name="custom_one"))
    (tmp_path / "helpers.py").write_text("raise RuntimeError('a helper is imported by its suite, not by load')")
    (tmp_path / "conftest.py").write_text("raise RuntimeError('not a suite file')")
    specs = {spec.name: spec for spec in registry.load([tmp_path])}
    assert {"forward", "custom_one"} <= set(specs)
    spec = specs["custom_one"]
    assert (spec.scenario, spec.variant, spec.level) == (True, "scenario", 2)
    assert spec.items.scenarios == ("custom_one_case",)
    assert registry.load([tmp_path]) == registry.load([str(tmp_path)])  # loading again imports nothing twice


def test_load_leaves_out_the_properties_of_folders_it_is_not_given(fresh_registry, tmp_path):
    for name in ("first_suite", "second_suite"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "test_suite.py").write_text(SUITE.format(name=name))  # the same file name twice
    first = {spec.name for spec in registry.load([tmp_path / "first_suite"])}
    second = {spec.name for spec in registry.load([tmp_path / "second_suite"])}
    assert "first_suite" in first and "second_suite" not in first
    assert "second_suite" in second and "first_suite" not in second
    assert "first_suite" not in {spec.name for spec in registry.load()}


@pytest.mark.parametrize(("source", "message"), [
    ("import torchcts.no_such_module\n", "importing it raised ModuleNotFoundError: No module named"),
    ("def broken(:\n", "importing it raised SyntaxError: "),
    ("raise ValueError('first line\\nsecond line')\n", "importing it raised ValueError: first line$"),
    (SUITE.format(name="odd").replace('"inference"', '"telepathy"'), "property odd: capability 'telepathy' is not"),
    (SUITE.format(name="forward"), "property forward is registered twice"),
    ("import sys\nsys.exit(3)\n", r"importing it called sys\.exit\(3\)$"),
    ("raise SystemExit('bye')\n", r"importing it called sys\.exit\('bye'\)$"),
])
def test_a_broken_custom_module_fails_in_one_line_naming_its_file(fresh_registry, tmp_path, source, message):
    path = tmp_path / "test_broken.py"
    path.write_text(source)
    with pytest.raises(RegistryError) as raised:
        registry.load([tmp_path])
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"{path}: ")
    assert re.search(message, text), text
    assert registry.capability_map()["forward"] == "inference"


def test_a_custom_module_failing_half_way_leaves_none_of_its_properties(fresh_registry, tmp_path):
    (tmp_path / "test_half.py").write_text(SUITE.format(name="half_way") + "raise ValueError('after registering')\n")
    with pytest.raises(RegistryError, match="importing it raised ValueError: after registering"):
        registry.load([tmp_path])
    assert "half_way" not in registry.capability_map()
    assert not [m for m in sys.modules if m.startswith(registry.CUSTOM_MODULE_PREFIX) and m.endswith(".test_half")]
    (tmp_path / "test_half.py").write_text(SUITE.format(name="half_way"))  # fixed: it loads now
    assert "half_way" in {spec.name for spec in registry.load([tmp_path])}


def test_an_interrupt_while_importing_a_custom_module_propagates(fresh_registry, tmp_path):
    (tmp_path / "test_interrupted.py").write_text(SUITE.format(name="interrupted") + "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        registry.load([tmp_path])
    assert "interrupted" not in registry.capability_map()


def test_a_custom_suite_file_registering_no_property_warns_once(fresh_registry, tmp_path):
    path = tmp_path / "test_unregistered.py"
    path.write_text("def test_forgot_the_decorator(cts):\n    pass\n")
    (tmp_path / "test_suite.py").write_text(SUITE.format(name="registered_one"))
    with pytest.warns(RegistryWarning) as warned:
        specs = registry.load([tmp_path])
    assert [str(w.message) for w in warned] == [
        f"{path}: a suite file of custom_test_dirs that registers no property (decorate its checks with "
        f"@register_property)"]
    assert "registered_one" in {spec.name for spec in specs}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.load([tmp_path])  # loaded already: no second warning


def test_an_opinfo_source_defaults_to_every_op_in_its_cpu_dtypes():
    from torchcts.plan.catalog import find_op

    items = OpInfoItems()
    op = find_op("abs")
    assert items.variant == "function" and items.applies(op)
    assert set(items.dtypes(op)) == set(op.supported_dtypes("cpu"))
