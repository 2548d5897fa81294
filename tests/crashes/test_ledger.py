"""The known-crash ledger: one format for CPU-oracle and backend crashes, torch bounds, hostile fields, audit."""

import json

import pytest
import torch

from torchcts.crashes import ledger, versions
from torchcts.crashes.ledger import LedgerError, audit_lines, ledger_rules, load_ledger
from torchcts.plan.items import PlanItem


def item(op, prop="forward", dtype="float32"):
    return PlanItem(prop, op, "function", dtype, 1)


def write(tmp_path, rules):
    path = tmp_path / "known_crashes.json"
    path.write_text(json.dumps({"rules": rules}))
    return path


def test_the_packaged_ledger_loads_and_bounds_every_oracle_rule():
    rules = load_ledger(ledger.PACKAGED)
    oracle = [rule for rule in rules if rule.is_oracle]
    assert oracle and all(rule.torch and rule.device_type is None for rule in oracle)
    assert {rule.kind for rule in rules} == {"oracle", "backend"}
    by_op = {rule.op: rule for rule in oracle}
    assert by_op["^special\\..*polynomial"].timeout_s < ledger.DEFAULT_CASE_TIMEOUT_S  # a hang costs its limit a case
    assert any(rule.dtypes == ("bfloat16", "float16") for rule in oracle)  # the former plan-time table lives here now
    assert any(rule.corrupts and rule.cases == ("large_dim",) for rule in oracle)  # grid_sample's heap corruption


def test_both_kinds_parse_with_their_fields(tmp_path):
    path = write(tmp_path, [
        {"kind": "oracle", "op": "^foo$", "property": "backward", "dtypes": ["torch.bfloat16"], "torch": ">=2.13,<2.14",
         "cases": ["empty", "zero_stride"], "timeout_s": 2.5, "reason": "CPU dies"},
        {"op": "^bar$", "device_type": "faulty", "reason": "backend dies"},  # kind defaults to backend
    ])
    oracle, backend = load_ledger(path)
    assert (oracle.kind, oracle.property_name, oracle.dtypes, oracle.timeout_s) == \
        ("oracle", "backward", ("bfloat16",), 2.5)
    assert oracle.cases == ("empty", "zero_stride") and backend.cases is None
    assert (backend.kind, backend.device_type, backend.torch) == ("backend", "faulty", None)
    assert oracle.name == f"{path}#0"


def test_an_oracle_rule_applies_on_every_device_a_backend_rule_on_its_own():
    oracle = ledger.CrashRule("x", 0, "^foo$", "dies", kind="oracle", torch=">=2.13,<2.14")
    backend = ledger.CrashRule("x", 1, "^foo$", "dies", device_type="faulty")
    for device in ("cpu", "faulty", "cuda"):
        assert oracle.matches("forward", "foo", "float32", device, (2, 13))
    assert backend.matches("forward", "foo", "float32", "faulty", (2, 13))
    assert not backend.matches("forward", "foo", "float32", "cpu", (2, 13))


def test_a_rule_for_another_torch_minor_does_not_match():
    rule = ledger.CrashRule("x", 0, "^foo$", "dies", kind="oracle", torch=">=2.13,<2.14")
    assert rule.matches("forward", "foo", "float32", "cpu", (2, 13))
    assert not rule.matches("forward", "foo", "float32", "cpu", (2, 14))
    assert not rule.matches("forward", "foo", "float32", "cpu", (2, 12))
    assert not rule.matches("forward", "foobar", "float32", "cpu", (2, 13))


def test_version_ranges():
    assert versions.torch_minor("2.13.0+cpu") == (2, 13) and versions.torch_minor("10.2") == (10, 2)
    assert versions.version_in((2, 13), ">=2.13, <2.14") and versions.version_in((3, 0), None)
    assert not versions.version_in((2, 14), "==2.13")
    assert versions.valid_range(">2.1,<=3.0") and not versions.valid_range("2.13") and not versions.valid_range("")


@pytest.mark.parametrize("field, value, says", [
    ("kind", "cpu", "allowed: oracle"),
    ("op", "(", "not a regex"),
    ("op", 7, "non-empty string"),
    ("reason", "", "non-empty string"),
    ("property", "nonesuch", "known: forward"),
    ("property", ["forward"], "known: forward"),
    ("dtypes", ["float99"], "dtype names"),
    ("dtypes", [], "dtype names"),
    ("dtypes", "float32", "dtype names"),
    ("torch", "2.13", "clauses like"),
    ("torch", 2.13, "clauses like"),
    ("timeout_s", 0, "(0, 3600]"),
    ("timeout_s", "5", "(0, 3600]"),
    ("timeout_s", True, "(0, 3600]"),
    ("timeout_s", 1e9, "(0, 3600]"),
    ("device_type", "cuda", "applies on every device"),
    ("cases", ["nan"], "case traits: special_values, empty, zero_stride, large_dim"),
    ("cases", [], "case traits"),
    ("cases", "empty", "case traits"),
    ("corrupts", "yes", "true or false"),
    ("corrupts", 1, "true or false"),
])
def test_a_hostile_oracle_field_is_one_line_naming_file_rule_and_field(tmp_path, field, value, says):
    rule = {"kind": "oracle", "op": "^foo$", "torch": ">=2.13,<2.14", "reason": "dies", field: value}
    path = write(tmp_path, [{"kind": "backend", "op": "^ok$", "reason": "fine"}, rule])
    with pytest.raises(LedgerError) as error:
        load_ledger(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: rules[1].{field}: ") and says in message


@pytest.mark.parametrize("rule, says", [
    ({"kind": "oracle", "op": "^foo$", "reason": "dies"}, "rules[0].torch: required for an oracle rule"),
    ({"op": "^foo$", "reason": "dies", "timeout_s": 5}, "rules[0].timeout_s: only oracle rules"),
    ({"op": "^foo$", "reason": "dies", "cases": ["empty"]}, "rules[0].cases: only oracle rules"),
    ({"op": "^foo$", "reason": "dies", "corrupts": True}, "rules[0].corrupts: only oracle rules"),
    ({"op": "^foo$", "reason": "dies", "device_type": ""}, "rules[0].device_type: ''"),
    ({"op": "^foo$", "reason": "dies", "dtype": "f"}, "rules[0]: unknown field(s) dtype; allowed: kind, op"),
    ("rule", "rules[0]: expected an object"),
])
def test_hostile_rules_of_either_kind(tmp_path, rule, says):
    with pytest.raises(LedgerError, match=None) as error:
        load_ledger(write(tmp_path, [rule]))
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_corrupting_oracle_rule_leaves_its_cases_unrun_even_where_forking_works(tmp_path):
    from torchcts.isolation.policy import IsolationPolicy

    crash = {"kind": "oracle", "op": "^foo$", "torch": ">=2.13,<2.14", "cases": ["large_dim"], "reason": "dies"}
    plain, corrupting = load_ledger(write(tmp_path, [crash, {**crash, "op": "^bar$", "corrupts": True}]))
    assert not plain.corrupts and corrupting.corrupts and "not run" in corrupting.describe()
    policy = IsolationPolicy(rules=(plain, corrupting), device_type="cpu", torch_version=(2, 13))
    assert policy.case_isolation(item("foo")).fork and not policy.case_isolation(item("bar")).fork
    assert policy.case_isolation(item("bar")).probe_runner()(lambda: None, torch.zeros(300)) is None


@pytest.mark.parametrize("text, says", [("{", "not JSON"), ("[]", "a list `rules`"),
                                        ('{"rules": {}}', "a list `rules`"), (b"\xff\xfe", "not JSON")])
def test_a_hostile_file(tmp_path, text, says):
    path = tmp_path / "known_crashes.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LedgerError, match=says):
        load_ledger(path)
    with pytest.raises(LedgerError, match="cannot read"):
        load_ledger(tmp_path / "missing.json")


def test_a_local_ledger_is_merged_and_policy_off_keeps_only_oracle_rules(tmp_path):
    path = write(tmp_path, [{"kind": "oracle", "op": "^foo$", "torch": ">=2.0", "reason": "dies"},
                            {"op": "^bar$", "reason": "backend dies"}])
    packaged = load_ledger(ledger.PACKAGED)
    merged = ledger_rules("isolate", path)
    assert merged[:len(packaged)] == packaged and [r.op for r in merged[len(packaged):]] == ["^foo$", "^bar$"]
    off = ledger_rules("off", path)
    assert off and all(rule.is_oracle for rule in off) and "^foo$" in [r.op for r in off]
    assert ledger_rules("isolate", tmp_path / "absent.json") == packaged


def test_audit_lines_cover_both_kinds(tmp_path):
    oracle, backend, elsewhere = load_ledger(write(tmp_path, [
        {"kind": "oracle", "op": "^foo$", "torch": ">=2.13,<2.14", "timeout_s": 4, "reason": "CPU dies"},
        {"op": "^bar$", "device_type": "faulty", "reason": "backend dies"},
        {"kind": "oracle", "op": "^baz$", "torch": "==2.12", "reason": "old CPU died"},
    ]))
    items = [item("foo"), item("foo", "backward"), item("bar")]
    lines, ok = audit_lines([oracle, backend, elsewhere], items, "faulty", (2, 13))
    text = "\n".join(lines)
    assert ok and f"{oracle.name}: 2 items: oracle: op '^foo$', torch >=2.13,<2.14, 4 s a case: CPU dies" in text
    assert "    forward::foo::function::float32" in lines and "    backward::foo::function::float32" in lines
    assert f"{backend.name}: 1 items: backend: op '^bar$', device faulty: backend dies" in text
    assert f"{elsewhere.name}: does not apply to this device or torch" in text
    lines, ok = audit_lines([oracle, backend], items, "cpu", (2, 13))
    assert ok and f"{backend.name}: does not apply" in "\n".join(lines)  # an oracle rule applies on cpu too
    lines, ok = audit_lines([oracle], [item("bar")], "cuda", (2, 13))
    assert not ok and f"{oracle.name}: matches no item" in lines[0]


@pytest.mark.slow
def test_the_crash_modules_import_no_plan_module():
    import subprocess
    import sys

    code = ("import sys, torchcts.crashes.ledger, torchcts.isolation.policy; "
            "assert not [m for m in sys.modules if m.startswith('torchcts.plan')], 'a plan module imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
