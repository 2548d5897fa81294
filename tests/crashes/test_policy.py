"""The isolation policy over the ledger: oracle rules isolate cases, backend rules isolate whole items."""

from torchcts.crashes import ledger
from torchcts.crashes.ledger import CrashRule
from torchcts.isolation.policy import FORK, SPAWN, CaseIsolation, IsolationPolicy, start_method
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


def test_without_forking_crash_prone_cases_are_not_run_and_items_are_isolated_in_spawned_workers():
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    unforked = policy(can_fork=False, everything=True, evidence={item("abs").id: "crashed in run 1"})
    found = unforked.case_isolation(item("linalg.eigvals"))
    assert found.reason == "CPU eigvals aborts on NaN" and not found.fork
    assert found.probe_runner()(lambda: None, SampleInput(torch.eye(2))) is None  # a crash-prone probe: not run
    assert unforked.reason(item("hypot")) == unforked.reason(item("abs")) == "--subprocess-per-test"
    assert policy(can_fork=False).reason(item("hypot")) == "known crash rule local.json#1: the backend's hypot aborts"
    assert start_method(unforked, "faulty") == SPAWN and start_method(policy(), "faulty") == FORK
    assert start_method(policy(), "cuda") == SPAWN  # never a fork where the device does not survive it
    assert start_method(policy(start="spawn"), "faulty") == SPAWN and start_method(None, "cpu") == FORK
    nan_only = CrashRule("x", 0, "^abs$", "dies", kind="oracle", torch=">=2.0", cases=("special_values",))
    runner = IsolationPolicy(rules=(nan_only,), torch_version=(2, 13), can_fork=False).case_isolation(
        item("abs")).probe_runner()
    assert runner(lambda: None, SampleInput(torch.tensor([float("nan")]))) is None
    assert runner(lambda: None, SampleInput(torch.tensor([1.0]))) is True


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
                                   "isolated) (items in forked children, item timeout 900 s)")
    assert policy(start="spawn", everything=True).describe() == (
        "every item, 1 known backend crash rules, 1 known CPU-oracle crash rules (their cases isolated) "
        "(items in a spawned worker, item timeout 900 s)")


def test_case_traits_read_from_the_tensors():
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.crashes.traits import case_traits

    plain = torch.arange(6.0).reshape(2, 3)
    assert case_traits(SampleInput(plain, args=(torch.tensor([1, 2]),))) == frozenset()
    assert case_traits(SampleInput(plain, args=(torch.tensor(float("nan")),))) == {"special_values"}
    assert case_traits(SampleInput(torch.tensor([3.0e38]))) == {"special_values"}  # a huge degree, finite
    assert case_traits(SampleInput(torch.tensor([2**63 - 1]))) == {"special_values"}
    assert case_traits(SampleInput(torch.tensor([0, 1], dtype=torch.uint8))) == frozenset()
    assert case_traits(SampleInput(torch.tensor([1 + 2j]).conj())) == frozenset()
    assert case_traits(SampleInput(torch.empty(0, 3))) == {"empty"}
    assert case_traits(SampleInput(torch.ones(3).expand(4, 3))) == {"zero_stride"}
    assert case_traits(SampleInput(torch.ones(5, 257, 7), kwargs={"s": (2, 3)})) == {"large_dim"}
    assert case_traits(torch.ones(1).expand(1)) == frozenset()  # stride 0 over a size-1 dimension: no trait


def test_an_oracle_rule_with_case_traits_isolates_only_those_cases():
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    nan_only = CrashRule("x", 0, "^linalg\\.eigvals$", "NaN kills it", kind="oracle", torch=">=2.13",
                         cases=("special_values",))
    every = CrashRule("x", 1, "^linalg\\.", "kills it", kind="oracle", torch=">=2.13", timeout_s=40.0)
    found = IsolationPolicy(rules=(nan_only,), torch_version=(2, 13)).case_isolation(item("linalg.eigvals"))
    assert found.isolates(SampleInput(torch.full((2, 2), float("nan"))))
    assert not found.isolates(SampleInput(torch.eye(2)))
    both = IsolationPolicy(rules=(nan_only, every), torch_version=(2, 13)).case_isolation(item("linalg.eigvals"))
    assert both.cases is None and both.timeout_s == 40.0 and both.reason == "NaN kills it; kills it"
    assert both.isolates(SampleInput(torch.eye(2)))


def test_the_probe_runner_forks_only_probes_the_rule_needs():
    import os

    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    nan_only = CrashRule("x", 0, "^abs$", "dies", kind="oracle", torch=">=2.0", cases=("special_values",))
    runner = IsolationPolicy(rules=(nan_only,), torch_version=(2, 13)).case_isolation(item("abs")).probe_runner()
    parent = os.getpid()

    def dies_in_a_child():
        if os.getpid() != parent:
            os.abort()

    assert runner(dies_in_a_child, SampleInput(torch.tensor([float("inf")]))) is None  # forked: died there
    assert runner(dies_in_a_child, SampleInput(torch.tensor([1.0]))) is True  # in this process
    assert runner(lambda: 1 / 0, SampleInput(torch.tensor([float("inf")]))) is False
