"""`torchcts triage`: classify a run's failing records and group them by root-cause signature (docs/triage.md)."""
