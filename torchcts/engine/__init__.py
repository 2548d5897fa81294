"""The engine: one plan item in, one result record out, without pytest. `run` runs an item
(`run_item`: build its context, run its property's registered check, store the counterexample,
fork the item or its cases where the isolation policy says so), `outcome` classifies how a check
ended by exception type, `context` holds what a property check runs with (draws, the two
executions, comparison), `case_fork` runs one case in a forked child, `targets` the device or
compiler under test, `oracle` the comparison and tolerance model. Front ends (pytest plugin, fuzz
workers, replay, selftest) are adapters over it.
"""
