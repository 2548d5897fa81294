"""Path shapes: a curated corpus of operator calls with the shapes real model families use.

Each case (a ResNet stem convolution, a LLaMA grouped-query attention, a DLRM embedding bag, ...) names
its family, an op from an explicit allow-list (`ops.OPS`), its operands' shapes, dtypes and memory
layouts, literal keyword arguments, a resource tier, a semantic level, an example budget (seeded value
draws) and optional waivers. `corpus` reads and validates the JSON files (untrusted data: bounded,
never executed), `runner` runs the cases on a device against the CPU oracle and writes a normal run
folder. docs/path-shapes.md describes the format and the commands.
"""
