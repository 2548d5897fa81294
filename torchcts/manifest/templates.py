"""`torchcts init` templates: render a starting manifest from manifests/templates/.

Each template is a few claims (purpose, level, dtypes, capabilities) on top of one shared layout,
so every template lists every key and every capability in the same order. `torchcts init --probe`
renders the same layout with `DraftClaims` in place of the template's dtype and capability claims,
its `skip_ops`, and a header that marks the file as a draft to review.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Mapping

import attrs
import jinja2

from torchcts import dtypes
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.template_names import TEMPLATE_NAMES

# Capabilities that need more than one device or a backend-specific decoder stay out of `complete`.
_NOT_IN_COMPLETE = ("multi_device", "custom_quantized_decode")
# What ends a Python source line (\r alone does) or makes compile() refuse the text (NUL): never inside a comment.
_LINE_BREAKS = re.compile("[\x00\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


class _Regex(str):
    """A template value written as a raw-string regex literal."""


def _python_literal(value: object) -> str:
    if isinstance(value, _Regex) and '"' not in value and not value.endswith("\\") and not _LINE_BREAKS.search(value):
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


@attrs.frozen
class DraftClaims:
    """What a probe found, in place of a template's claims: dtype -> True, False or an op regex; the
    capabilities claimed; a comment per dtype or capability the probe dropped; `skip_ops` op -> reason;
    the comment lines of the draft's header (without "# ")."""

    header: tuple[str, ...]
    dtype_claims: Mapping[str, bool | str]
    capabilities: tuple[str, ...]
    skip_ops: Mapping[str, str] = attrs.field(factory=dict)
    dtype_notes: Mapping[str, str] = attrs.field(factory=dict)
    capability_notes: Mapping[str, str] = attrs.field(factory=dict)

    def for_template(self) -> dict[str, object]:
        return {"header": [_LINE_BREAKS.sub(" ", str(line)) for line in self.header],
                "dtype_claims": {name: _Regex(value) if isinstance(value, str) else value
                                 for name, value in self.dtype_claims.items()},
                "capabilities": list(self.capabilities), "skip_ops": dict(sorted(self.skip_ops.items())),
                "dtype_notes": {k: _comment(v) for k, v in self.dtype_notes.items()},
                "capability_notes": {k: _comment(v) for k, v in self.capability_notes.items()}}


def _comment(text: str) -> str:
    """Text that stays inside one `#` comment line."""
    return " ".join(_LINE_BREAKS.sub(" ", str(text)).split())


def render_template(name: str, device_name: str = "auto", backend_import: str | None = None,
                    draft: DraftClaims | None = None) -> str:
    """The text of `manifest.py` for template `name` (with `draft`: the probe's claims instead of the template's)."""
    if name not in TEMPLATE_NAMES:
        raise ValueError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATE_NAMES)}")
    template = _environment().get_template(f"{name}.py.jinja")
    return template.render(template=name, device_name=device_name, backend_import=backend_import,
                           draft=draft.for_template() if draft is not None else None)


def template_purpose(name: str) -> str:
    """What a template is for: the first comment line of the manifest it writes."""
    first_line = render_template(name).splitlines()[0]
    return first_line.removeprefix("#").strip()
