"""The `init` template names, importable without torch (the CLI builds its options from them)."""

TEMPLATE_NAMES: tuple[str, ...] = ("smoke", "minimal", "inference", "training", "complete")
