"""Cost of the container codec and its strategy: decode throughput on CPU and the faulty device, draws per second.

    python benchmarks/bench_containers.py [--elements N] [--repeat R]

Prints, per format family (uint4, nf4, mxfp4, fp6_e3m2, int8_asymmetric): CPU decode of N elements
(million elements per second, best of R), the same on the faulty device (its generic path: every op
through CPU plus wrapping), and how many `containers(...)` cases Hypothesis draws per second (what
a suite's example costs before the device runs anything).
"""

from __future__ import annotations

import argparse
import time

import torch
from hypothesis import HealthCheck, given, settings

from torchcts.containers import FORMATS, Container, decode_container, pack_codes
from torchcts.containers.codec import program_arguments
from torchcts.strategies.containers import PACKED_LAYOUTS, containers

NAMES = ("uint4", "nf4", "mxfp4", "fp6_e3m2", "int8_asymmetric")


def container(name: str, elements: int) -> Container:
    spec = FORMATS[name]
    elements -= elements % 96  # whole blocks of 32, whole 6-bit words
    codes = torch.randint(0, len(spec.codes), (elements,)).tolist()
    groups = elements // (spec.block or 64)
    scale = (torch.full((groups,), 127, dtype=torch.uint8) if spec.scale == "e8m0" else torch.rand(groups) + 0.5)
    zero = torch.randint(*spec.zero_point_range, (groups,), dtype=torch.int32) if spec.zero_point else None
    return Container(name, pack_codes([spec.codes[c] for c in codes], spec.bits, spec.msb_first), scale, zero,
                     (elements,))


def best_seconds(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def decode_rate(c: Container, device: str, repeat: int) -> float:
    move = (lambda t: None if t is None else t.to(device))
    packed, scale, zero = move(c.packed), move(c.scale), move(c.zero_point)
    args = program_arguments(c.spec, device)
    seconds = best_seconds(lambda: decode_container(packed, scale, zero, c.shape, torch.float32, **args).cpu(), repeat)
    return c.shape[0] / seconds / 1e6


def draws_per_second(name: str, examples: int = 200) -> float:
    @settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(containers(name, layouts=PACKED_LAYOUTS))
    def draw(c):
        pass

    start = time.perf_counter()
    draw()
    return examples / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    import torchcts.testing.faulty  # noqa: F401 - registers the device

    print(f"{'format':<18}{'CPU Melem/s':>12}{'faulty Melem/s':>16}{'draws/s':>10}")
    for name in NAMES:
        c = container(name, args.elements)
        print(f"{name:<18}{decode_rate(c, 'cpu', args.repeat):>12.1f}{decode_rate(c, 'faulty', args.repeat):>16.1f}"
              f"{draws_per_second(name):>10.0f}")


if __name__ == "__main__":
    main()
