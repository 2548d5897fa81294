"""The engine: one plan item in, one result record out. `context` holds what a property check runs
with (draws, the two executions, comparison), `targets` the device or compiler under test, `oracle`
the comparison and tolerance model. Front ends (pytest plugin, fuzz workers, replay, selftest) are
adapters over it.
"""
