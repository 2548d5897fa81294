"""Corpus cases: the JSON codec of a case (`codec`), reading case files safely (`files`, `limits`), cutting a
failing case down (`reduce`), storing a counterexample (`store`) in the default folder (`corpus_default`,
never the curated corpus shipped with TorchCTS), replaying stored cases (`replay`) and exporting one as a
standalone torch-only script (`export`). Case files are untrusted data: reading one
never executes anything and is bounded in memory.
"""
