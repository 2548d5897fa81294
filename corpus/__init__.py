"""The curated corpus: reviewed counterexamples found in real backends, replayable (`torchcts.corpus`)."""
