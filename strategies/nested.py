"""Nested tensors (jagged and strided layouts) built from dense components they hold bit for bit.

What torch 2.13 (CPU) accepts, and so what is generated:

- Zero-length components are accepted by both layouts, also when every component is empty.
- The jagged layout refuses 0-d components, an empty component list, and components differing in
  more than one dim (it has a single ragged dim). `torch.nested.nested_tensor` accepts that ragged
  dim anywhere; `nested_tensor_from_jagged` (used here for the offsets and lengths forms) only as
  the components' first dim.
- The strided layout accepts 0-d components, an empty list and components differing in any dims,
  but not the dtypes complex32, uint16/32/64 or float8 ("create_nt_buffer" not implemented); the
  jagged layout takes them all.
- Both refuse components of different dims; the strided layout silently casts components of
  different dtypes, so `nested_forms` refuses mixed dtypes itself.
"""

from __future__ import annotations

import functools

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.values import values

NESTED_LAYOUTS = (torch.jagged, torch.strided)
_MAX_GAP = 2  # rows of junk after each component in the lengths form


def _normalize_layouts(layouts) -> tuple[torch.layout, ...]:
    if isinstance(layouts, torch.layout):
        layouts = (layouts,)
    try:
        result = tuple(dict.fromkeys(layouts))
    except TypeError:
        raise InvalidArgument(f"layouts must be a sequence of torch.jagged / torch.strided, got {layouts!r}") from None
    bad = [layout for layout in result if layout not in NESTED_LAYOUTS]
    if bad or not result:
        raise InvalidArgument(f"layouts must be some of {NESTED_LAYOUTS}, got {layouts!r}")
    return result


@functools.cache
def _layout_works(layout: torch.layout, dtype: torch.dtype) -> bool:
    """Whether torch builds and unbinds a tiny nested tensor of `layout` and `dtype` (probed once)."""
    try:
        parts = [torch.zeros((1, 2), dtype=dtype), torch.zeros((2, 2), dtype=dtype)]
        torch.nested.nested_tensor(parts, layout=layout).unbind()
        return True
    except (RuntimeError, NotImplementedError, TypeError):
        return False


def _ragged_dims(shapes: list[torch.Size]) -> list[int]:
    return [d for d in range(len(shapes[0])) if len({shape[d] for shape in shapes}) > 1]


def _jagged_fits(shapes: list[torch.Size]) -> bool:
    return bool(shapes) and len(shapes[0]) >= 1 and len(_ragged_dims(shapes)) <= 1


@st.composite
def _jagged(draw, components: list[torch.Tensor], dtype: torch.dtype, form: int) -> torch.Tensor:
    """Copied by nested_tensor, or (ragged dim first) a view of one buffer by offsets, or with gaps by lengths."""
    forms = ["copy"]
    if _ragged_dims([c.shape for c in components]) in ([], [0]):
        forms += ["offsets", "lengths"]
    form = forms[min(form, len(forms) - 1)]
    if form == "copy":
        return torch.nested.nested_tensor(components, layout=torch.jagged)
    lengths = [c.shape[0] for c in components]
    inner = tuple(components[0].shape[1:])
    if form == "offsets":
        offsets = torch.tensor([0] + lengths).cumsum(0)
        return torch.nested.nested_tensor_from_jagged(torch.cat(components), offsets)
    gaps = draw(st.lists(st.integers(0, _MAX_GAP), min_size=len(components), max_size=len(components)),
                label="gaps")
    junk = [torch.full((gap, *inner), 7.0).to(dtype) for gap in gaps]  # never read through the lengths
    buffer = torch.cat([part for pair in zip(components, junk) for part in pair])
    offsets = torch.tensor([0] + [n + gap for n, gap in zip(lengths, gaps)]).cumsum(0)
    return torch.nested.nested_tensor_from_jagged(buffer, offsets, lengths=torch.tensor(lengths))


def nested_forms(components, layouts=NESTED_LAYOUTS) -> st.SearchStrategy[torch.Tensor]:
    """Nested tensors `nt` whose `unbind()` equals `components` bit for bit, in one of `layouts` that fits.

    Jagged forms: a copy made by `torch.nested.nested_tensor`, or, when the ragged dim is the
    first, `nested_tensor_from_jagged` over the concatenated components (offsets only: contiguous)
    or over a buffer with junk rows between them (offsets and lengths: non-contiguous). Strided:
    `torch.nested.nested_tensor`. Shrinks toward the first fitting layout, then the copy form.
    """
    try:
        components = None if isinstance(components, torch.Tensor) else list(components)
    except TypeError:
        components = None
    if components is None or not all(isinstance(c, torch.Tensor) for c in components):
        raise InvalidArgument("components must be a list of tensors")
    components = [c.detach().contiguous() for c in components]
    layouts = _normalize_layouts(layouts)
    if len({c.dtype for c in components}) > 1 or len({c.dim() for c in components}) > 1:
        raise InvalidArgument("components must share one dtype and one number of dims")
    if any(c.layout != torch.strided or c.device.type != "cpu" for c in components):
        raise InvalidArgument("components must be strided CPU tensors (place the result on a device after)")
    dtype = components[0].dtype if components else torch.float32
    shapes = [c.shape for c in components]
    fitting = [layout for layout in layouts if _layout_works(layout, dtype)
               and (layout == torch.strided or _jagged_fits(shapes))]
    if not fitting:
        raise InvalidArgument(
            f"none of {layouts} can hold {len(components)} {dtype} components of shapes {[tuple(s) for s in shapes]} "
            f"in torch {torch.__version__} (jagged: >= 1 component of dim >= 1 with at most one ragged dim; "
            f"strided: no complex32, uint16/32/64 or float8)")

    @st.composite
    def forms(draw):
        layout = draw(st.sampled_from(fitting), label="layout")
        # Drawn for both layouts, so that strided makes no shorter (simpler) choice sequence than
        # jagged: Hypothesis's shrinker prefers fewer choices over earlier ones.
        form = draw(st.integers(0, 2), label="jagged form")
        if layout == torch.jagged:
            return draw(_jagged(components, dtype, form))
        return torch.nested.nested_tensor(components, layout=torch.strided)

    return forms()


def nested_components(nt: torch.Tensor) -> list[torch.Tensor]:
    """The dense components of a nested tensor, as contiguous copies (independent of its buffer)."""
    return [c.contiguous().clone() for c in nt.unbind()]


def nested_tensors(dtype: torch.dtype, *, layouts=NESTED_LAYOUTS, max_components: int = 4, max_ragged: int = 6,
                   max_inner_dims: int = 2, max_side: int = 4) -> st.SearchStrategy[torch.Tensor]:
    """Nested tensors of `dtype`: 1 to `max_components` components of shape (ragged length, *inner).

    The ragged lengths (0 to `max_ragged`) are drawn per component, the inner shape (up to
    `max_inner_dims` dims of side up to `max_side`) is shared, values come from `values` (special
    values included), and the form from `nested_forms`. Shrinks toward one component, lengths and
    sides of 1 (zero comes after), no inner dims, small-integer values and the simplest form.
    """
    if not isinstance(dtype, torch.dtype):
        raise InvalidArgument(f"dtype must be a torch.dtype, got {dtype!r}")
    limits = {"max_components": max_components, "max_ragged": max_ragged, "max_inner_dims": max_inner_dims,
              "max_side": max_side}
    for name, value in limits.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "max_components" else 0):
            raise InvalidArgument(f"{name} must be an int >= {int(name == 'max_components')}, got {value!r}")
    usable = tuple(layout for layout in _normalize_layouts(layouts) if _layout_works(layout, dtype))
    if not usable:
        raise InvalidArgument(f"torch {torch.__version__} builds no nested tensor of {dtype} in layouts {layouts}")

    def sizes(most: int) -> st.SearchStrategy[int]:
        """0..most, shrinking toward 1 (0 is the last value; st.one_of would shrink to 0 first)."""
        return st.integers(0, most).map(lambda k: (k + 1) % (most + 1))

    @st.composite
    def tensors(draw):
        count = draw(st.integers(1, max_components), label="components")
        lengths = [draw(sizes(max_ragged), label="ragged length") for _ in range(count)]
        inner = tuple(draw(sizes(max_side), label="inner side")
                      for _ in range(draw(st.integers(0, max_inner_dims), label="inner dims")))
        flat = draw(values((sum(lengths), *inner), dtype), label="values")
        components = [part.clone() for part in torch.split(flat, lengths)]
        return draw(nested_forms(components, usable))

    return tensors()


def _sizes(most: int) -> st.SearchStrategy[int]:
    """0..most, shrinking toward 1 (0 is the last value; st.one_of would shrink to 0 first)."""
    return st.integers(0, most).map(lambda k: (k + 1) % (most + 1))


@st.composite
def ragged_components(draw, dtype: torch.dtype, *, max_components: int = 4, max_ragged: int = 5,
                      min_inner_dims: int = 0, max_inner_dims: int = 2, max_side: int = 3, min_side: int = 0,
                      ragged_inner: bool = False, special: bool = True) -> list[torch.Tensor]:
    """A list of 1 to `max_components` contiguous CPU tensors of shape (ragged length, *inner), for a case.

    The components a program turns into a nested tensor itself. Lengths are drawn per component (0
    to `max_ragged`); the inner shape (`min_inner_dims` to `max_inner_dims` dims of side
    `min_side` to `max_side`) is shared, or with `ragged_inner` drawn per component too (only the
    strided layout holds that). Shrinks toward one component of length 1, the fewest inner dims
    of the smallest sides, small-integer values.
    """
    if not isinstance(dtype, torch.dtype):
        raise InvalidArgument(f"dtype must be a torch.dtype, got {dtype!r}")
    if not 0 <= min_inner_dims <= max_inner_dims or not 0 <= min_side <= max_side or max_components < 1:
        raise InvalidArgument(f"need 0 <= min_inner_dims <= max_inner_dims, 0 <= min_side <= max_side and "
                              f"max_components >= 1; got {min_inner_dims}, {max_inner_dims}, {min_side}, {max_side}, "
                              f"{max_components}")
    side = _sizes(max_side) if min_side == 0 else st.integers(min_side, max_side)
    count = draw(st.integers(1, max_components), label="components")
    lengths = [draw(_sizes(max_ragged), label="ragged length") for _ in range(count)]
    ndim = draw(st.integers(min_inner_dims, max_inner_dims), label="inner dims")
    inner = tuple(draw(side, label="inner side") for _ in range(ndim))
    if not ragged_inner:
        flat = draw(values((sum(lengths), *inner), dtype, special=special), label="values")
        return [part.clone() for part in torch.split(flat, lengths)]
    shapes = [(n, *(draw(side, label="own inner side") for _ in inner)) for n in lengths]
    return [draw(values(shape, dtype, special=special), label="component values") for shape in shapes]


@st.composite
def components_like(draw, components: list[torch.Tensor], *, special: bool = True) -> list[torch.Tensor]:
    """Other components of the same shapes and dtypes as `components` (a second operand)."""
    return [draw(values(tuple(c.shape), c.dtype, special=special), label="operand values") for c in components]
