"""Quantized containers move intact: packed bytes, scale and zero point survive every transfer bit for bit.

One item per container format a manifest lists in `supported_container_formats` (torchcts.containers.formats:
int8/uint8 affine per tensor and per channel, int4/uint4 two per byte in both nibble orders, 2-bit, 6-bit,
NF4/FP4/AF4 tables, fp8 bytes, the MX and NVFP4 block formats). A case is a container drawn by
`torchcts.strategies.containers`: its packed uint8 bytes in one of PACKED_LAYOUTS (contiguous, a window at
an odd offset of a larger buffer, every other byte, padded rows, column-major rows: the bytes around a view
hold 0xA5), its scale (float32, float16, bfloat16; E8M0 / E4M3 scale bytes as uint8 or as torch's
float8_e8m0fnu / float8_e4m3fn) and its zero point (int32 or the element's own width) where the format has
one. The engine places each tensor on the device with its exact layout (storage offset, strides).

The program (`container_transfer`) moves each of the three tensors every way a runtime does:
device -> host (`to("cpu", copy=True, non_blocking=...)`, then a synchronize), host -> device from a host
tensor with the device view's very layout (`to(device)`, and `copy_` into a device buffer laid out as the
view), device -> host `copy_` into a host buffer laid out as the view, device -> device (`clone`, `copy_`
into `empty_like`), and a reinterpretation on the device (`view` as the same-size integer dtype: the packed
bytes as int8, a float8 scale as uint8, a float32 scale as int32). Destination buffers are filled with 0x5A
and returned whole, so a copy that writes outside its view shows. **The oracle is the same program on CPU**;
the comparison is bit for bit (`comparison="bits"`), with dtypes, shapes and significant strides: a transfer
computes nothing, so a moved byte, a lost NaN scale byte or a scale that changed dtype is a bug.

Limits: one device (no peer copies: the multi_device suite), no pinned host buffers (pinned_memory), no
side streams (streams); the bytes are those of valid codes (the ternary format's unused code 3 never drawn).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag
from torchcts.manifest.vocabulary import CONTAINER_FORMATS
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Exact, Scenario, scenario_suite
from torchcts.strategies.containers import PACKED_LAYOUTS, container_bounds, containers

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("packed bytes (odd-offset windows, every other byte, padded rows, column-major), scales "
          "(float32/float16/bfloat16; E8M0/E4M3 bytes as uint8 or float8) and zero points survive device->host, "
          "host->device (same layout), device->device copies and same-size `view(dtype)` bit for bit, with their "
          "dtypes and strides, nothing written outside the destination")
ITEMS = "one per format in `supported_container_formats`, dtype uint8"


# -- the program (torch only: exported verbatim into reproduction scripts) ---------------------------

def container_transfer(input, scale, zero_point, non_blocking):
    """Every transfer of the packed bytes (`input`), the scale and the zero point (or None): what each gives."""
    device = input.device

    def synchronize():
        if non_blocking and device.type != "cpu":  # wait for non-blocking copies before reading their results
            module = getattr(torch, device.type, None)  # torch.cuda, torch.xpu, torch.mps, ...
            if module is not None and hasattr(module, "synchronize"):
                module.synchronize()
            elif torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == device.type:
                torch.accelerator.synchronize()

    def buffer(t, where):
        """A buffer on `where` filled with 0x5A bytes, and a view of it with `t`'s sizes, strides and offset."""
        span = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1 if t.numel() else 0
        whole = torch.full((span * t.element_size(),), 0x5A, dtype=torch.uint8, device=where).view(t.dtype)
        return whole, whole.as_strided(t.shape, t.stride(), t.storage_offset())

    def moves(t):
        span = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1 if t.numel() else 0
        to_host = t.to("cpu", copy=True, non_blocking=non_blocking)
        host_twin = torch.as_strided(t, (span,), (1,), 0).to("cpu", copy=True).as_strided(
            t.shape, t.stride(), t.storage_offset())  # a host tensor laid out as the device view
        host_whole, into_host = buffer(t, "cpu")
        into_host.copy_(t, non_blocking=non_blocking)
        synchronize()
        from_host = host_twin.to(device, copy=True, non_blocking=non_blocking)
        device_whole, into_device = buffer(t, device)
        into_device.copy_(host_twin, non_blocking=non_blocking)
        synchronize()
        twin = t.clone()
        copied = torch.empty_like(t)
        copied.copy_(t)
        size = t.element_size()
        same_size = (torch.uint8 if t.dtype == torch.int8 else torch.int8) if size == 1 else torch.int16 \
            if size == 2 else torch.float32 if t.dtype == torch.int32 else torch.int32
        return {"to_host": to_host, "into_host": into_host, "host_buffer": host_whole, "from_host": from_host,
                "into_device": into_device, "device_buffer": device_whole, "clone": twin, "copy_": copied,
                "reinterpreted": t.view(same_size), "dtype": str(t.dtype)}

    moved = {"packed": moves(input), "scale": moves(scale)}
    if zero_point is not None:
        moved["zero_point"] = moves(zero_point)
    return moved


# -- cases ------------------------------------------------------------------------------------------

def transfer_cases(cts):
    drawn = containers(cts.item.op, layouts=PACKED_LAYOUTS)

    @st.composite
    def draw(draw_):
        container = draw_(drawn, label="container")
        non_blocking = draw_(st.booleans(), label="non_blocking")
        return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], {
            "input": container.packed, "scale": container.scale, "zero_point": container.zero_point,
            "non_blocking": non_blocking}, (container.describe(), f"non_blocking={non_blocking}"))

    return draw()


PROGRAMS = {name: container_transfer for name in CONTAINER_FORMATS}


def _params(name: str) -> CaseParams:
    """A format's stored values: its packed bytes, scale, zero point (`container_bounds`) and the flag."""
    bounds = container_bounds(name)
    return CaseParams({"scale": bounds["scale"], "zero_point": bounds["zero_point"], "non_blocking": Flag()},
                      input=bounds["packed"])


PARAMS = {name: _params(name) for name in CONTAINER_FORMATS}
# the aten overloads the program runs on a device (traced on the faulty device; the coverage audit reads them)
_OVERLOADS = ("aten._to_copy.default", "aten.copy_.default", "aten.clone.default", "aten.empty_like.default",
              "aten.empty.memory_format", "aten.fill_.Scalar", "aten.view.dtype", "aten.as_strided.default")


# A container moved to the device and back holds its bytes, scale and zero point bit for bit; one scenario per
# container format a manifest claims (`supported_container_formats`).
test_quantized_containers = scenario_suite(
    "quantized_containers", capability="quantized_container_plumbing", level=6, dtypes=("uint8",),
    formats="supported_container_formats", overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], container_transfer, Exact(), cases=transfer_cases)
               for name in CONTAINER_FORMATS])
