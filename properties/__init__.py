"""Property suites run against a backend, one pytest module per area (installed as `torchcts.properties`).

The suites arrive with the conformance-run issue; the TorchCTS pytest plugin collects them.
"""
