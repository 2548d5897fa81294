"""Diagnostic probes: what a device can do at all, before (or instead of) a conformance run.

- `dtypes`: per dtype, allocate, copy both ways, fill, one elementwise op, compared with the CPU.
- `capabilities`: per capability, its cheapest check (a backward, a save/load, a seeded draw, ...).
- `runner`: runs probes guarded, in a forked child where the device survives one.
- `records`: `probes.jsonl`, run.json's `probes` summary, the console's lines; `probe_run` for a run.
- `ops` and `draft`: `torchcts init --probe`, which runs a template's items once through the
  engine and writes a draft manifest whose claims match what the device has.

Probes never change a manifest, a plan or an outcome: they explain the failures that follow.
docs/harness.md ("Probes") describes them for users.
"""
