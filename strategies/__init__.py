"""Hypothesis strategies for PyTorch backends: dtypes, shapes, values, tensors and their layouts.

Installed as `torchcts.strategies`; usable on their own by a backend team writing its own
properties. The strategies arrive with the strategies issue; this package reserves the namespace.
"""
