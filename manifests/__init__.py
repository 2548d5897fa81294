"""Manifests shipped with TorchCTS: the `torchcts init` templates (templates/*.py.jinja) and reviewed manifests for
real targets (targets/*.py; `torchcts.manifest.targets` picks one by --device and --compile)."""
