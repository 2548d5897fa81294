"""`torchcts fuzz`: budgeted bug hunting with random seeds; new shrunk counterexamples go to the corpus.

The parent process plans the items (as `run` does) and runs a hunt (`hunt`): a `Scheduler`
(`scheduler`, pure) visits every item once, then draws items with weights that grow when an item
shows new behaviour (a new corpus case, a larger error: the properties call `hypothesis.target`
while fuzzing) and halve when it shows none; a `WorkerPool` (`pool`) hands one visit at a time (an
item, a fresh seed, a number of examples) to spawned worker processes (`worker`), thin adapters
over the engine's `run_item`, which run the property exactly as `run` would (shrinking, reducing
and storing a failure). A worker that dies or hangs is replaced, its item recorded `crashed` or
`timed_out`, and the hunt goes on. The budget (`options`) is time, visits or both; every choice
comes from one seeded generator and the visits' results, so with one worker a visit budget makes a
hunt independent of the machine's speed: the same seed, corpus and versions give the same visits,
seeds and cases on any machine.
"""
