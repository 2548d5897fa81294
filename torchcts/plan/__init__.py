"""From a manifest to a plan: the property registry (`registry`: every property's name, capability,
level, item source and check), the OpInfo catalog (`catalog`), the run's selection (`selection`, and
`shards`: which of N shards runs an item), the items that run and an accounting record with a reason
for every item that does not (`items`, built by `build`), and the show-skips view of it (`skips`).
"""
