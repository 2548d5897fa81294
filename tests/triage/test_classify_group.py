"""Triage's machinery on its own: classification from record fields, conditions of real tensors, grouping."""

from __future__ import annotations

import math

import attrs
import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.triage.classify import classify
from torchcts.triage.clusters import Failure, group
from torchcts.triage.conditions import Condition, output_features, sample_condition
from torchcts.triage.families import OPINFO_PROPERTIES, kernel_stem, op_family
from torchcts.triage.kernels import TraceLimits, TraceStopped, check_size, trace_case, trace_isolated
from torchcts.triage.suspects import Suspect, kernel_suspects, suspects


def record(outcome="failed", **fields):
    return {"item": f"forward::add::function::float32", "property": "forward", "op": "add", "dtype": "float32",
            "level": 1, "outcome": outcome, **fields}


@attrs.frozen
class FakeCase:  # the two fields of a CorpusCase classify reads (a real CorpusCase is used end to end)
    inputs: dict
    failure: dict


@pytest.mark.parametrize("fields, kind, evidence", [
    (dict(outcome="crashed", signal="SIGABRT"), "crash", "outcome crashed (SIGABRT)"),
    (dict(outcome="timed_out"), "hang", "outcome timed_out"),
    (dict(outcome="error", error_kind="missing_kernel", missing_kernel={"overload": "aten::trunc"}), "unsupported",
     "error_kind missing_kernel (aten::trunc)"),
    (dict(outcome="error", error_kind="backend", error_line="NotImplementedError: no"), "unsupported",
     "error_kind backend, message NotImplementedError"),
    (dict(outcome="error", error_kind="backend", error_line="RuntimeError: x"), "error_parity", "error_kind backend"),
    (dict(outcome="error", error_kind="setup"), "harness", "error_kind setup"),
    (dict(outcome="error", error_kind="nonsense"), "harness", "outcome error"),
    (dict(property="errors"), "error_parity", "property errors"),
    (dict(property="deterministic"), "nondeterminism", "property deterministic"),
    (dict(error_line="faulty differs from CPU: output: dtype torch.float64, CPU gives torch.float32"), "dtype",
     "message (last resort)"),
    (dict(error_line="faulty differs from CPU: output: strides (1, 2), CPU gives (2, 1)"), "strides", "message"),
    (dict(error_line="output: 3 at flat index 0, CPU gives 4"), "values", "outcome failed"),
])
def test_kinds_come_from_structured_fields_first(fields, kind, evidence):
    verdict = classify(record(**fields))
    assert verdict.kind == kind and verdict.evidence.startswith(evidence), verdict


def test_the_stored_case_outranks_the_message():
    case = FakeCase({"input": None}, {"difference": "output: strides (1, 4), CPU gives (4, 1)"})
    verdict = classify(record(error_line="output: dtype torch.float64, CPU gives torch.float32"), case)
    assert (verdict.kind, verdict.evidence) == ("strides", "case failure.difference: strides")
    verdict = classify(record(), FakeCase({"input": None, "error_type": "IndexError"}, {}))
    assert verdict.kind == "error_parity" and "IndexError" in verdict.evidence


def features(*inputs, **kwargs):
    return sample_condition(inputs[0], list(inputs[1:]), kwargs)


def test_conditions_read_layout_size_and_special_values_off_real_tensors():
    x = torch.arange(12.0).reshape(3, 4)
    assert features(x).features == () and features(x).size_class == "small"
    assert features(x.t()).features == ("non-contiguous",)
    assert features(x[1:]).features == ("storage offset",)
    assert features(torch.ones(3, 1).expand(3, 4)).features == ("expanded",)
    assert features(torch.ones(2, 3, 4, 5).to(memory_format=torch.channels_last)).features == ("channels_last",)
    assert features(torch.ones(0, 3)).features == ("empty",)
    assert features(torch.tensor(1.0)).features == () and features(torch.tensor(1.0)).size_class == "scalar"
    assert features(torch.ones(2000)).features == ("large",)
    special = torch.tensor([math.nan, math.inf, -0.0, 1e-40])
    assert features(special).features == ("-0", "inf", "nan", "subnormal")
    assert features(torch.tensor([1, 2**31 - 1], dtype=torch.int32)).features == ("int extremes",)
    assert features(torch.tensor([1, 2**64 - 1], dtype=torch.uint64)).features == ("int extremes",)  # no ge kernel
    assert features(torch.tensor([1, 2], dtype=torch.uint64)).features == ()
    assert features(torch.tensor([0, 3], dtype=torch.uint8)).features == ()
    assert features(torch.tensor([-2**31, 3], dtype=torch.int32)).features == ("int extremes",)
    assert features(torch.ones(2, dtype=torch.int64), 2**31).features == ("wide int scalar",)
    assert features(torch.ones(2, dtype=torch.int32), 2.5).features == ("float scalar",)
    mixed = features(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert mixed.features == ("mixed dtypes",) and mixed.dtypes == ("float32", "float64") and mixed.tensors == 2
    assert features(torch.ones(2, 2).to_sparse()).features == ("sparse_coo",)


def test_families_split_elementwise_by_tensor_count_and_name_suites():
    assert op_family("add", tensor_inputs=2) == "elementwise binary"
    assert op_family("nn.functional.relu", tensor_inputs=1) == "elementwise unary"
    assert op_family("max.reduction_no_dim") == op_family("sum") == op_family("argmax") == "reduction"
    assert (op_family("mm"), op_family("sort"), op_family("eq"), op_family("diagonal")) == (
        "matmul", "sort", "comparison", "indexing")
    assert op_family("nn.functional.max_pool2d") == "pooling" and op_family("normal") == "random"
    assert op_family("anything", scenario_suite="views") == "suite views"


def test_opinfo_properties_are_the_registrys():
    from torchcts.plan import registry

    assert OPINFO_PROPERTIES == {spec.name for spec in registry.load() if not spec.scenario}


def failure(item, kind="values", feats=(), elements=4, family="elementwise binary", dtype="float32"):
    condition = Condition(tuple(feats), "small", (dtype,), 2, elements, "case x", True)
    return Failure(item, "forward", item.split("::")[1], "function", dtype, "failed", kind, "e", family, condition)


def test_grouping_joins_dtypes_and_supersets_and_picks_the_smallest_case():
    """Plain cases are told apart by their op; a condition that holds another's and more joins it."""
    failures = [failure("forward::abs::function::float32", feats=("storage offset",), elements=8),
                failure("forward::abs::function::int32", feats=("storage offset",), elements=2, dtype="int32"),
                failure("forward::exp::function::float32", feats=("large", "storage offset"), elements=1),
                failure("forward::sum::function::float32", feats=("large",), elements=2000),  # a size takes no one
                failure("forward::add::function::float32", feats=("non-contiguous",)),
                failure("forward::mul::function::float32"),  # plain: joins nothing
                failure("forward::sub::function::float32", kind="dtype", feats=("storage offset",))]
    clusters = group(failures)
    assert [(c.kind, c.condition, c.count) for c in clusters] == [
        ("values", "storage offset", 3), ("values", "large", 1), ("values", "non-contiguous", 1),
        ("values", "plain, op mul", 1), ("dtype", "storage offset", 1)]
    offset = clusters[0]
    assert offset.representative.item == "forward::exp::function::float32"  # 1 element
    assert offset.differs() == {"op": ["abs", "exp"], "dtype": ["float32", "int32"],
                                "case dtypes": ["float32", "int32"], "condition": ["large, storage offset",
                                                                                   "storage offset"]}
    assert set(offset.as_json()["items"]) == {f.item for f in failures[:3]}


def test_one_kernel_under_other_names_is_one_cluster():
    """Plain cases group by the kernel their op most likely runs (torch's aliases, sub as add); one condition in two
    families joins where a kernel fails in both (amax and maximum: max's NaN rule), and only there."""
    assert (kernel_stem("sub"), kernel_stem("true_divide"), kernel_stem("__rdiv__"), kernel_stem("masked.amax"),
            kernel_stem("max.reduction_no_dim"), kernel_stem("unsafe_split"), kernel_stem("nn.functional.relu"),
            kernel_stem("batch_norm3d"), kernel_stem("nn.functional.conv_transpose2d"), kernel_stem("atleast_1d"),
            kernel_stem("clamp_min_.Tensor"), kernel_stem("__iadd__")) == (
        "add", "div", "div", "max", "max", "split", "relu", "batch_norm", "conv_transpose", "atleast", "clamp_min",
        "__iadd__")
    failures = [failure("forward::add::function::float32"), failure("forward::sub::function::float32"),
                failure("forward::mul::function::float32"),
                failure("forward::amax::function::float32", feats=("nan",), family="reduction"),
                failure("forward::maximum::function::float32", feats=("nan",)),
                failure("forward::maximum::function::bfloat16", feats=("nan",)),
                failure("forward::minimum::function::float32", feats=("inf",)),
                failure("forward::sum::function::float32", feats=("inf",), family="reduction")]
    clusters = {(c.family, c.condition): c for c in group(failures)}
    assert set(clusters) == {("elementwise binary", "plain, op add"), ("elementwise binary", "plain, op mul"),
                             ("elementwise binary", "nan"), ("elementwise binary", "inf"), ("reduction", "inf")}
    nan = clusters["elementwise binary", "nan"]
    assert nan.count == 3 and nan.differs()["family"] == ["elementwise binary", "reduction"]
    assert clusters["elementwise binary", "plain, op add"].differs()["op"] == ["add", "sub"]


def test_the_failing_outputs_layout_is_read_off_the_op_on_its_case():
    def layout(op, sample, difference):
        return output_features(trace_case(op, sample).outputs, difference)

    sample = SampleInput(torch.arange(12.0).reshape(4, 3), args=(2,))
    assert layout("split", sample, "output 1: 7 at flat index 0, CPU gives 6") == ("output storage offset",)
    assert layout("split", sample, "output 0: 7 at flat index 0, CPU gives 6") == ()
    transposed = SampleInput(torch.arange(12.0).reshape(4, 3), args=(0, 1))
    assert layout("transpose", transposed, "output: strides (3, 1)") == ("output non-contiguous",)
    assert layout("expand", SampleInput(torch.ones(3, 1), args=((3, 4),)), None) == ("output expanded",)
    assert layout("no such op", sample, None) == ()  # a name from a file is only a catalog key
    assert output_features((("storage offset",),), "output " + "9" * 5000 + ": x") == ("output storage offset",)
    offset_input = SampleInput(torch.arange(12.0)[2:].reshape(2, 5), args=(1, 1, 3))
    assert layout("narrow", offset_input, None) == ("output non-contiguous", "output storage offset")
    # split points in a tensor: data-dependent (meta cannot answer), the CPU can: views at offsets
    by_tensor = SampleInput(torch.arange(6.0), args=(torch.tensor([2]),))
    assert layout("tensor_split", by_tensor, "output 1: 1 at flat index 0, CPU gives 2") == ("output storage offset",)


def test_the_kernels_inside_a_composite_op_that_saw_a_feature():
    """A composite op is the calls it decomposes into: each (kernel family, feature) its calls show is a suspect;
    views compute nothing and are not suspects; mixed operands only where asked for."""
    def suspects_of(op, sample, with_dtypes=False):
        return suspects(trace_case(op, sample), with_dtypes)

    loss = suspects_of("nn.functional.l1_loss", SampleInput(torch.arange(12.0).reshape(3, 4).t(),
                                                             args=(torch.ones(4, 3),)))
    assert loss == (Suspect("elementwise binary", "non-contiguous", ("aten.sub.Tensor",)),
                    Suspect("elementwise unary", "non-contiguous", ("aten.abs.default",)),
                    Suspect("reduction", "non-contiguous", ("aten.mean.default",)))
    # gradient slices its plain input: the subtraction inside sees views at an offset
    inside = suspects_of("gradient", SampleInput(torch.arange(6.0)))
    assert Suspect("elementwise binary", "storage offset", ("aten.sub.Tensor",)) in inside
    assert suspects_of("transpose", SampleInput(torch.ones(2, 3), args=(0, 1))) == ()
    mixed = SampleInput(torch.ones(2, dtype=torch.int32), args=(torch.ones(2),))
    assert suspects_of("add", mixed) == ()
    assert suspects_of("add", mixed, with_dtypes=True) == (Suspect("elementwise binary", "mixed dtypes",
                                                                   ("aten.add.Tensor",)),)
    assert suspects_of("no such op", mixed, with_dtypes=True) == ()  # a name from a file is only a catalog key


def test_a_traced_call_is_sized_on_meta_before_the_cpu_runs_it():
    small = torch.ones(4, 2).t()
    check_size(torch.ops.aten.repeat.default, (small, [1, 8]), {})  # 64 elements: runs
    with pytest.raises(TraceStopped, match="output elements"):  # 2**23 elements: never allocated
        check_size(torch.ops.aten.repeat.default, (small, [1, 1 << 20]), {})
    check_size(torch.ops.aten.nonzero.default, (torch.ones(3),), {})  # no meta answer, but its input bounds it
    with pytest.raises(TraceStopped, match="sparse"):
        check_size(torch.ops.aten.add.Tensor, (torch.ones(2, 2).to_sparse(), torch.ones(2, 2)), {})
    # a hostile case asking a polynomial of degree 10**9: its CPU kernel would loop that often per element
    with pytest.raises(TraceStopped, match="degree"):
        check_size(torch.ops.aten.special_legendre_polynomial_p.default, (torch.ones(3), torch.tensor(1e9)), {})
    check_size(torch.ops.aten.special_legendre_polynomial_p.default, (torch.ones(3), torch.tensor(5.0)), {})
    # a hostile case asking an op for 2 GB: stopped on meta, nothing allocated (without the guard this returns)
    assert trace_case("repeat", SampleInput(torch.ones(2, dtype=torch.uint8), args=((1 << 30,),))).outputs is None
    # the bounds of a whole traced case: calls dispatched, output elements of all calls; the calls before are kept
    loss = SampleInput(torch.arange(12.0).reshape(3, 4).t(), args=(torch.ones(4, 3),))
    whole = trace_case("nn.functional.l1_loss", loss)
    assert whole.outputs is not None and len(whole.calls) == 3
    for limits in (TraceLimits(calls=2), TraceLimits(total_elements=20)):  # sub and abs make 12 elements each
        stopped = trace_case("nn.functional.l1_loss", loss, limits)
        assert stopped.outputs is None and stopped.calls == whole.calls[:len(stopped.calls)], limits
        assert 1 <= len(stopped.calls) < 3


def test_a_traced_case_runs_in_a_child_within_memory_and_time():
    """What one kernel does inside is not sized (a convolution's scratch, a pooling window, a polynomial's loop):
    the child tracing a case has an address-space cap and a timeout; either ends its trace, not the caller."""
    # 64 MB each (past glibc's largest mmap threshold: every buffer is new address space, whatever ran before)
    pair = SampleInput(torch.rand(1 << 23, dtype=torch.float64), args=(torch.rand(1 << 23, dtype=torch.float64),))
    roomy = TraceLimits(call_elements=1 << 24, total_elements=1 << 25)
    assert trace_isolated("add", pair, roomy).outputs == ((),)  # within the default 2 GB
    capped = trace_isolated("add", pair, attrs.evolve(roomy, memory_bytes=8 << 20))
    assert capped.outputs is None and capped.stopped, capped
    slow = SampleInput(torch.linspace(-0.9, 0.9, 2000).reshape(2000, 1), args=(torch.full((1, 2000), 9999.0),))
    late = trace_isolated("special.legendre_polynomial_p", slow, TraceLimits(timeout_s=2))  # minutes on the CPU
    assert late.outputs is None and "killed" in late.stopped, late


def traced(item, sample, feats, family, kind="values"):
    op = item.split("::")[1]
    found = tuple(s for s in suspects(trace_case(op, sample), with_dtypes=False) if s.feature in feats)
    return attrs.evolve(failure(item, kind=kind, feats=feats, family=family), suspects=found)


def test_failures_move_to_the_kernel_that_saw_their_condition():
    """diff (one tensor) and l1_loss (a loss) on a non-contiguous input fail where add does: their subtraction
    sees it, so the three are one cluster; abs, whose case is both offset and non-contiguous, joins exp's offset
    cluster, the explanation another failure confirms."""
    strided = torch.arange(12.0).reshape(3, 4).t()
    offset = torch.arange(13.0)[1:].reshape(3, 4)
    failures = [traced("forward::add::function::float32", SampleInput(strided, args=(torch.ones(4, 3),)),
                       ("non-contiguous",), "elementwise binary"),
                traced("forward::diff::function::float32", SampleInput(strided), ("non-contiguous",),
                       "elementwise unary"),
                traced("forward::nn.functional.l1_loss::function::float32",
                       SampleInput(strided, args=(torch.ones(4, 3),)), ("non-contiguous",), "loss"),
                traced("forward::exp::function::float32", SampleInput(offset), ("storage offset",),
                       "elementwise unary"),
                traced("layout::abs::function::float32", SampleInput(offset.t()), ("non-contiguous", "storage offset"),
                       "elementwise unary")]
    clusters = {(c.family, c.condition): c for c in group(failures)}
    assert set(clusters) == {("elementwise binary", "non-contiguous"), ("elementwise unary", "storage offset")}
    binary = clusters["elementwise binary", "non-contiguous"]
    assert binary.differs()["op"] == ["add", "diff", "nn.functional.l1_loss"]
    assert "aten.sub.Tensor" in binary.differs()["kernels"]
    unary = clusters["elementwise unary", "storage offset"]
    assert unary.differs()["input condition"] == ["non-contiguous, storage offset", "storage offset"]
    assert unary.differs()["kernels"] == ["aten.abs.default", "aten.exp.default"]


def test_error_checks_group_by_what_cpu_raised():
    """An OpInfo may declare a generic `Exception`; the record says what CPU raised, and that is the group."""
    from torchcts.triage.run import _failure

    said = record(property="errors", op="max.binary", outcome="failed",
                  error="faulty rejects an input CPU rejects, but differently: it raised RuntimeError where CPU "
                        "raises IndexError; faulty: RuntimeError: Dimension out of range")
    known = Condition((), "small", ("float32",), 1, 1, "case x", True)
    found = _failure(said, known, FakeCase({"input": None, "error_type": "Exception"}, {}))
    assert (found.family, found.condition.describe()) == ("error checks", "CPU raises IndexError")
    silent = _failure(record(property="errors"), known, FakeCase({"input": None, "error_type": "ValueError"}, {}))
    assert silent.condition.describe() == "CPU raises ValueError"


def test_a_wrong_result_dtype_groups_by_the_dtypes_whatever_op_or_suite():
    """One promotion rule (or autocast policy) breaks many ops and scenarios: (device's, CPU's) dtype is the group."""
    from torchcts.triage.run import _failure

    known = Condition((), "small", ("float32",), 1, 1, "case x", True)
    wide = "faulty differs from CPU: output: dtype torch.float64, CPU gives torch.float32"
    narrow = "faulty differs from CPU: output: dtype torch.bfloat16, CPU gives torch.float32"
    failures = [_failure(record(op="cov", item="forward::cov::function::float32", error_line=wide), known, None),
                _failure(record(property="autocast", op="kl_div", item="autocast::kl_div::scenario::bfloat16",
                                error_line=wide), known, None),
                _failure(record(property="autocast", op="exp", item="autocast::exp::scenario::bfloat16",
                                error_line=narrow), known, None)]
    clusters = {(c.family, c.condition): c.count for c in group(failures)}
    assert clusters == {("result dtype", "float64 where CPU gives float32"): 2,
                        ("result dtype", "bfloat16 where CPU gives float32"): 1}


def test_a_plain_composite_failure_joins_the_kernel_it_calls_that_fails_alone():
    """A case that shows nothing: each kernel the op ran is a suspect; cosine_similarity's division is the one that
    fails on its own (div's failures), so it joins them; the conversions composite ops call are no suspects."""
    def plain(item, sample, family):
        trace = trace_case(item.split("::")[1], sample)
        return attrs.evolve(failure(item, family=family), suspects=kernel_suspects(trace))

    pair = SampleInput(torch.ones(2, 3), args=(torch.full((2, 3), 3.0),))
    failures = [plain("forward::div::function::float32", pair, "elementwise binary"),
                plain("forward::true_divide::function::float32", pair, "elementwise binary"),
                plain("forward::nn.functional.cosine_similarity::function::float32", pair, "elementwise binary"),
                plain("forward::masked.argmax::function::float32", SampleInput(torch.ones(2, 3), kwargs={"dim": 1}),
                      "reduction")]
    assert [s.stem for s in failures[3].suspects] == ["argmax"]  # not the _to_copy after it
    clusters = {(c.family, c.condition): c for c in group(failures)}
    assert set(clusters) == {("elementwise binary", "plain, op div"), ("reduction", "plain, op argmax")}
    assert clusters["elementwise binary", "plain, op div"].differs()["op"] == [
        "div", "nn.functional.cosine_similarity", "true_divide"]
