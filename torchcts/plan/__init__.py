"""From a manifest to a plan: the OpInfo catalog (`catalog`), the property registry, the run's
selection, the items that run and an accounting record with a reason for every item that does not
(`build`), and the show-skips view of it (`skips`).
"""
