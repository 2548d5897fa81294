"""Test helpers shipped with TorchCTS: the fault-injecting `faulty` device (torchcts.testing.faulty)."""
