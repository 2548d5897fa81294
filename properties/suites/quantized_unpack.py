"""Quantized containers unpack on the device as the CPU codec unpacks them, bit for bit.

One item per (container format a manifest lists in `supported_container_formats`, output dtype: float32,
bfloat16, float16). A case is a container drawn by `torchcts.strategies.containers` (packed bytes in any of
PACKED_LAYOUTS: offset windows, every other byte, padded rows, column-major rows; scale and zero point in
the dtypes the format allows) and the format's decoding arguments (`codec.program_arguments`: its code
table and, for E8M0 / E4M3 scale bytes, its scale table, as float32 tensors; bits; bit order).

The program is the CPU codec itself, `torchcts.containers.codec.decode_container`, run on the device on the
placed container: widening the bytes to int32, assembling words with shifts and ors, extracting codes with
shifts and masks, gathering the table at the codes (and the scale table at the scale bytes), subtracting the
zero point, multiplying by the scale, one cast to the output dtype. **The oracle is the same program on
CPU**, compared bit for bit (`comparison="bits"`): every step is exact or correctly rounded once (float32
products, one cast), so a correct device gives identical bits, NaN and infinity codes, -0.0 and subnormal
products included.

"Where the backend offers it": a device that lacks a kernel one of those steps needs (the dispatcher names
it: `missing_kernels.find`) makes the case `runtime_unavailable` naming the kernel, so an item whose cases
all lack one is `runtime_unavailable` with the kernel named, never a pass; any other exception is an `error`,
any other difference a failure naming the element.

Limits: decoding is checked as these generic torch ops compose, not a backend's own fused decoder (the
custom_quantized_decode suite holds those to the codec); no packing on the device; no autograd.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Dtypes, OneOf, Tensors
from torchcts.containers import FORMATS
from torchcts.containers.codec import decode_container, program_arguments
from torchcts.engine.context import MissingKernelError
from torchcts.engine.targets import CaseUnavailable
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.properties.exact_check import exact_program_check
from torchcts.strategies import Case
from torchcts.strategies.containers import PACKED_LAYOUTS, container_bounds, container_fits, containers
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("the CPU codec's `decode_container` run on the device (widen to int32, shifts, masks, table gather, zero "
          "point, scale, one cast) gives CPU's bits; a kernel the device lacks makes the case runtime_unavailable "
          "with the kernel named")
ITEMS = "one per format in `supported_container_formats` x float32, bfloat16, float16"

UNPACK_DTYPES = ("float32", "bfloat16", "float16")


def unpack_cases(cts):
    spec = FORMATS[cts.item.op]
    drawn = containers(cts.item.op, layouts=PACKED_LAYOUTS)
    dtype = cts.dtype

    @st.composite
    def draw(draw_):
        container = draw_(drawn, label="container")
        arguments = program_arguments(spec)  # CPU tensors: placed on the device with the case
        sample = sample_input(container.packed, args=(
            container.scale, container.zero_point, list(container.shape), dtype, arguments["table"],
            arguments["scale_table"], arguments["bits"], arguments["msb_first"]))
        return Case(cts.item.op, "scenario", cts.dtype, sample, 0, transforms=(container.describe(), f"to {dtype}"))

    return draw()


def unpack_check(cts, row=None):
    """exact_program_check of `decode_container`, with a kernel the device lacks making the case unavailable."""
    exact = exact_program_check(cts, decode_container)

    def check(case: Case) -> None:
        try:
            exact(case)
        except MissingKernelError as exc:
            raise CaseUnavailable(f"the device does not unpack here: {exc.kernel.describe()}") from exc

    return check


PROGRAMS = {name: decode_container for name in CONTAINER_FORMATS}


def _params(name: str) -> CaseParams:
    """A format's stored values: the container (`container_bounds`, tied together by `container_fits`), the dtype,
    and the format's own tables, bits and bit order (the program indexes the tables with codes and scale bytes)."""
    spec, bounds = FORMATS[name], container_bounds(name)

    def fits(params: dict) -> bool:
        return container_fits(name, params["input"], params["scale"], params["zero_point"], params["shape"])

    def tables(params: dict) -> bool:
        table, scale_table = params["table"], params["scale_table"]
        return (table.dtype == torch.float32 and table.numel() == 1 << spec.bits
                and (scale_table is None or (scale_table.dtype == torch.float32 and scale_table.numel() == 256)))

    scale_table = Tensors(256, 1) if spec.scale_table() is not None else OneOf((None,))
    return CaseParams({"scale": bounds["scale"], "zero_point": bounds["zero_point"], "shape": bounds["shape"],
                       "dtype": Dtypes(UNPACK_DTYPES), "table": Tensors(1 << spec.bits, 1), "scale_table": scale_table,
                       "bits": OneOf((spec.bits,)), "msb_first": OneOf((spec.msb_first,))},
                      input=bounds["packed"], rules=((f"the parts make one {name} container", fits),
                                                     ("a table entry a code, one a scale byte", tables)))


PARAMS = {name: _params(name) for name in CONTAINER_FORMATS}
# the aten overloads decode_container runs on a device (traced on the faulty device; the coverage audit reads them)
_OVERLOADS = ("aten._to_copy.default", "aten.__lshift__.Scalar", "aten.__rshift__.Tensor", "aten.bitwise_and.Scalar",
              "aten.bitwise_or.Tensor", "aten.index.Tensor", "aten.mul.Tensor", "aten.sub.Tensor",
              "aten.view.dtype", "aten.zero_.default", "aten.select.int", "aten.slice.Tensor")


# A container unpacked on the device gives CPU's values bit for bit (`unpack_check`); one scenario per container
# format a manifest claims (`supported_container_formats`).
test_quantized_unpack = scenario_suite(
    "quantized_unpack", capability="quantized_container_plumbing", level=6, dtypes=UNPACK_DTYPES,
    formats="supported_container_formats", overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], decode_container, Custom(unpack_check, bits=True), cases=unpack_cases)
               for name in CONTAINER_FORMATS])
