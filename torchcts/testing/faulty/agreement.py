"""Does the faulty device agree with CPU? Run OpInfo samples on both and list every difference.

With no bug switched on, the faulty device must give CPU's answers bit for bit: same dtype,
shape, strides and values, on inputs placed with exactly the CPU layout. Ops whose values are
undefined or random are compared on metadata only (`torchcts.engine.oracle.values_comparable`).
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import attrs
import torch
from torch.utils._pytree import tree_flatten

from torchcts.plan.catalog import op_id, ops_supporting
from torchcts.engine.oracle import values_comparable
from torchcts.strategies import call_variant, place, same_bits, sample_pool
from torchcts.strategies.samples import cpu_pinned_paths
from torchcts.testing.faulty.device import DEVICE_NAME

_SEED = 1234


@attrs.frozen
class Disagreement:
    op: str
    sample_index: int
    problem: str
    rounding_only: bool = False  # values differ in the last bits only (within float tolerance)


# Every op on which the faulty device, with no bug on, does not give CPU's exact answer on some
# OpInfo sample, and why. `rounding` entries must stay within torch.testing's default tolerance.
EXPLAINED = {
    **dict.fromkeys(("arange", "linspace", "linspace.tensor_overload", "logspace", "logspace.tensor_overload"), (
        "mismatch", "factory samples without a device argument create on CPU on both sides (the default device)")),
    "to": ("mismatch", "its samples pass an explicit device ('cpu'), so the result is rightly on CPU"),
    "nn.functional.scaled_dot_product_attention": (
        "mismatch", "CPU runs the fused flash-attention kernel; off CPU the composite runs the math kernel"),
    "linalg.cond": ("mismatch", "its svd takes torch's tensor-subclass branch for a Python device (U and V too): on "
                                "inputs holding inf it can fail to converge where CPU's svdvals returns"),
    **dict.fromkeys(("matmul", "__rmatmul__", "norm.nuc", "linalg.eigvalsh", "linalg.norm", "linalg.matrix_norm",
                     "linalg.svdvals"), (
        "rounding", "torch's composites take their tensor-subclass branch for a Python device (isTensorSubclassLike):"
                    " svdvals also computes U and V, matmul does not fold batch dims; last-bit differences")),
    # seen in the double_backward suite (inputs that require grad, complex or float16): not root-caused further
    **dict.fromkeys(("pinverse", "linalg.pinv", "linalg.lstsq", "linalg.lstsq.grad_oriented", "linalg.eigh",
                     "nn.functional.embedding", "cumprod"), (
        "mismatch", "with inputs that require grad, torch's composites and derivative formulas take their "
                    "tensor-subclass branch for a Python device (isTensorSubclassLike): complex pinv and lstsq give "
                    "other values (lstsq's float32 samples differ in the last bits), eigh's complex double backward "
                    "and embedding's float64 one raise, cumprod's float16 second-order gradients round apart")),
    # scenarios of the dispatch property (generated overloads, named in lower_snake_case)
    **dict.fromkeys(("kaiser_window_default", "kaiser_window_periodic", "kaiser_window_beta"), (
        "mismatch", "its explicit composite fills the window through a DispatchStub with no PrivateUse1 entry: an "
                    "out-of-tree device needs a kernel of its own, and the faulty device has none (INTERNAL ASSERT)")),
    **dict.fromkeys(("sparse_coo_tensor_size", "private_sparse_coo_tensor_with_dims_default"), (
        "mismatch", "the faulty device registers no SparsePrivateUse1 kernels: a sparse factory on it is a missing "
                    "kernel (`_sparse_coo_tensor_with_dims`)")),
    "private_empty_affine_quantized_default": (
        "mismatch", "the faulty device registers no QuantizedPrivateUse1 kernels: a quantized factory with no tensor "
                    "argument on it is a missing kernel (`_empty_affine_quantized`)"),
    **dict.fromkeys(("private_nested_tensor_size_default", "private_nested_tensor_strides_default",
                     "private_nested_tensor_storage_offsets_default", "to_padded_tensor_default",
                     "private_nested_from_padded_and_nested_example_default", "private_nested_from_padded_default",
                     "private_nested_select_backward_default", "private_nested_sum_backward_default",
                     "private_nested_tensor_from_mask_default", "private_nested_view_from_buffer_default",
                     "private_nested_view_from_buffer_copy_default"), (
        "mismatch", "curated calls of strided nested tensors (NestedTensorCPU kernels): the faulty device holds no "
                    "strided nested tensors (FaultyTensor refuses them)")),
    # scenarios of the nested suite (their names stand where an op would)
    "strided_nested": ("mismatch", "the faulty device holds no strided nested tensors (FaultyTensor refuses them)"),
    "from_cpu": ("mismatch", "the faulty device has no storages of its own (its data lives in CPU storages): "
                             "torch.load with map_location='faulty' cannot move a CPU checkpoint's storages to it, "
                             "so those tensors stay on CPU"),
    "pin_memory": ("mismatch", "the faulty device has no pinned-memory allocator: torch asks a C++ "
                               "PrivateUse1HooksInterface for it, which a Python backend cannot register"),
    "jagged_sdpa": ("mismatch", "jagged SDPA off CPU/CUDA runs torch's math fallback through strided nested "
                                "tensors, which the faulty device cannot hold"),
}


@attrs.frozen
class AgreementReport:
    ops: int
    samples: int
    disagreements: tuple[Disagreement, ...]
    cpu_seconds: float
    faulty_seconds: float

    @property
    def overhead(self) -> float:
        """Time on the faulty device over time on CPU, for the same samples."""
        return self.faulty_seconds / self.cpu_seconds if self.cpu_seconds else float("nan")


def _run(op: Any, sample: Any) -> tuple[Any, BaseException | None, float]:
    torch.manual_seed(_SEED)
    start = time.perf_counter()
    try:
        result = call_variant(op, "function", sample)
    except Exception as exc:  # noqa: BLE001 - an op's own error is a result to compare
        return None, exc, time.perf_counter() - start
    return result, None, time.perf_counter() - start


def _compare(name: str, expected: Any, actual: Any) -> str | None:
    expected_leaves, expected_spec = tree_flatten(expected)
    actual_leaves, actual_spec = tree_flatten(actual)
    if expected_spec != actual_spec:
        return f"result structure {actual_spec} != CPU's {expected_spec}"
    for index, (want, got) in enumerate(zip(expected_leaves, actual_leaves)):
        if not isinstance(want, torch.Tensor):
            if isinstance(got, torch.Tensor) or (want != got and not (want != want and got != got)):
                return f"output {index}: {got!r} != CPU's {want!r}"
            continue
        if not isinstance(got, torch.Tensor):
            return f"output {index}: {type(got).__name__}, CPU gives a tensor"
        if got.device.type != DEVICE_NAME:
            return f"output {index} is on {got.device}, not on the faulty device"
        if (got.dtype, got.shape) != (want.dtype, want.shape):
            return f"output {index}: {got.dtype} {tuple(got.shape)} != CPU's {want.dtype} {tuple(want.shape)}"
        if want.layout == torch.strided and got.stride() != want.stride():
            return f"output {index}: strides {got.stride()} != CPU's {want.stride()}"
        if values_comparable(name) and want.layout == torch.strided and not same_bits(got.cpu(), want):
            try:
                torch.testing.assert_close(got.cpu(), want, equal_nan=True, check_device=False)
            except AssertionError:
                return f"output {index}: values differ beyond rounding"
            return ROUNDING
    return None


ROUNDING = "values differ in the last bits"


def check_agreement(ops: Iterable[Any] | None = None, dtype: torch.dtype = torch.float32) -> AgreementReport:
    """Run every sample of `ops` (default: every OpInfo supporting `dtype`) on CPU and on faulty."""
    ops = list(ops if ops is not None else ops_supporting(dtype))
    disagreements: list[Disagreement] = []
    cpu_seconds = faulty_seconds = 0.0
    samples = 0
    for op in ops:
        name = op_id(op)
        try:
            pool = sample_pool(op, dtype)
        except Exception as exc:  # noqa: BLE001
            disagreements.append(Disagreement(name, -1, f"sample_inputs raised {type(exc).__name__}: {exc}"))
            continue
        for index, sample in enumerate(pool):
            placed = place(sample, DEVICE_NAME, keep_on_cpu=cpu_pinned_paths(op, dtype))
            if not placed.faithful:
                disagreements.append(Disagreement(name, index, "; ".join(placed.mismatches)))
                continue
            cpu_sample = place(sample, "cpu").value  # a fresh copy: in-place ops must not see each other
            expected, cpu_error, cpu_time = _run(op, cpu_sample)
            actual, faulty_error, faulty_time = _run(op, placed.value)
            samples += 1
            cpu_seconds += cpu_time
            faulty_seconds += faulty_time
            if cpu_error is not None or faulty_error is not None:
                if (cpu_error is None) != (faulty_error is None):
                    which = "faulty" if faulty_error is not None else "CPU"
                    error = faulty_error or cpu_error
                    disagreements.append(Disagreement(name, index, f"only {which} raised {type(error).__name__}: "
                                                                   f"{str(error).splitlines()[0] if str(error) else ''}"))
                continue
            problem = _compare(op.name, expected, actual)
            if problem:
                disagreements.append(Disagreement(name, index, problem, rounding_only=problem == ROUNDING))
    return AgreementReport(len(ops), samples, tuple(disagreements), cpu_seconds, faulty_seconds)
