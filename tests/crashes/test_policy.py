"""The isolation policy over the ledger: oracle rules isolate cases, backend rules isolate whole items."""

from torchcts.crashes import ledger
from torchcts.crashes.ledger import CrashRule
from torchcts.isolation.policy import CaseIsolation, IsolationPolicy
from torchcts.plan.items import PlanItem

ORACLE = CrashRule("local.json", 0, "^linalg\\.eigvals$", "CPU eigvals aborts on NaN", kind="oracle",
                   torch=">=2.13,<2.14", timeout_s=7.0)
BACKEND = CrashRule("local.json", 1, "^hypot$", "the backend's hypot aborts", device_type="faulty")


def item(op, prop="forward", dtype="float32"):
    return PlanItem(prop, op, "function", dtype, 1)


def policy(**kwargs):
    return IsolationPolicy(**{"rules": (ORACLE, BACKEND), "device_type": "faulty", "torch_version": (2, 13), **kwargs})


def test_an_oracle_rule_isolates_cases_with_its_reason_and_limit():
    assert policy().case_isolation(item("linalg.eigvals")) == CaseIsolation(7.0, "CPU eigvals aborts on NaN",
                                                                             "local.json#0")
    assert policy().reason(item("linalg.eigvals")) is None  # the item itself runs in the session's process
    assert policy(device_type="cpu").case_isolation(item("linalg.eigvals")) is not None  # every device, validation too


def test_a_backend_rule_isolates_the_whole_item():
    assert policy().reason(item("hypot")) == "known crash rule local.json#1: the backend's hypot aborts"
    assert policy().case_isolation(item("hypot")) is None
    assert policy(device_type="cpu").reason(item("hypot")) is None


def test_no_rule_applies_on_another_torch_minor():
    for version in ((2, 12), (2, 14), (3, 13)):
        assert policy(torch_version=version).case_isolation(item("linalg.eigvals")) is None
    assert policy(torch_version=(2, 14)).reason(item("hypot")) is not None  # no torch bound: every version


def test_without_forking_oracle_items_still_say_why_and_nothing_is_isolated_whole():
    unforked = policy(can_fork=False, everything=True, evidence={item("abs").id: "crashed in run 1"})
    assert unforked.case_isolation(item("linalg.eigvals")).reason == "CPU eigvals aborts on NaN"
    assert unforked.reason(item("hypot")) is None and unforked.reason(item("abs")) is None


def test_the_packaged_oracle_rules_on_torch_2_13():
    rules = tuple(ledger.load_ledger(ledger.PACKAGED))
    on_213 = IsolationPolicy(rules=rules, device_type="cuda", torch_version=(2, 13))
    on_214 = IsolationPolicy(rules=rules, device_type="cuda", torch_version=(2, 14))
    for crashing in (item("linalg.eigvals"), item("pdist", "backward"), item("fft.hfftn"), item("median"),
                     item("special.legendre_polynomial_p"), item("nn.functional.grid_sample", dtype="bfloat16"),
                     item("grid_sampler_2d", "backward")):
        assert on_213.case_isolation(crashing) is not None, crashing.id
        assert on_214.case_isolation(crashing) is None, crashing.id
    assert on_213.case_isolation(item("special.legendre_polynomial_p")).timeout_s == 5
    for fine in (item("pdist"), item("abs"), item("nn.functional.grid_sample")):
        assert on_213.case_isolation(fine) is None, fine.id


def test_describe_counts_both_kinds():
    assert policy().describe() == ("1 known backend crash rules, 1 known CPU-oracle crash rules (their cases "
                                   "isolated) (item timeout 900 s)")
