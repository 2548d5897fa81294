"""Manifests shipped with TorchCTS: the `torchcts init` templates (templates/*.py.jinja)."""
