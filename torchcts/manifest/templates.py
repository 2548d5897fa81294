"""`torchcts init` templates: render a starting manifest from manifests/templates/.

Each template is a few claims (purpose, level, dtypes, capabilities) on top of one shared layout,
so every template lists every key and every capability in the same order.
"""

from __future__ import annotations

import json
from importlib import resources

import jinja2

from torchcts import dtypes
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.template_names import TEMPLATE_NAMES

# Capabilities that need more than one device or a backend-specific decoder stay out of `complete`.
_NOT_IN_COMPLETE = ("multi_device", "custom_quantized_decode")


class _Regex(str):
    """A template value written as a raw-string regex literal."""


def _python_literal(value: object) -> str:
    if isinstance(value, _Regex) and '"' not in value and not value.endswith("\\"):
        return f'r"{value}"'
    if isinstance(value, str):
        return json.dumps(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise TypeError(f"no literal form for {type(value).__name__} in a manifest template")


def _environment() -> jinja2.Environment:
    folder = resources.files("torchcts.manifests").joinpath("templates")
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: folder.joinpath(name).read_text(encoding="utf-8")),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["py"] = _python_literal
    env.filters["pad"] = lambda text, width: str(text).ljust(width)
    env.globals.update(
        regex=_Regex,
        dtype_names=dtypes.claimable_names(),
        capabilities=list(vocab.CAPABILITIES.items()),
        all_dtypes_claimed={name: True for name in dtypes.claimable_names()},
        single_device_capabilities=[c for c in vocab.CAPABILITIES if c not in _NOT_IN_COMPLETE],
        all_container_formats={name: True for name in vocab.CONTAINER_FORMATS},
    )
    return env


def render_template(name: str, device_name: str = "auto", backend_import: str | None = None) -> str:
    """The text of `manifest.py` for template `name`."""
    if name not in TEMPLATE_NAMES:
        raise ValueError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATE_NAMES)}")
    template = _environment().get_template(f"{name}.py.jinja")
    return template.render(template=name, device_name=device_name, backend_import=backend_import)


def template_purpose(name: str) -> str:
    """What a template is for: the first comment line of the manifest it writes."""
    first_line = render_template(name).splitlines()[0]
    return first_line.removeprefix("#").strip()
