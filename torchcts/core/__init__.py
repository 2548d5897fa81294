"""The torch-free core every layer may import: vocabularies, schemas, op categories, the result record and error
types. Nothing here imports torch, pytest, Hypothesis or any other torchcts package (docs/architecture.md)."""
