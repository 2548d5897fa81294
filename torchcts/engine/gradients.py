"""Fixed cotangents: the weights every gradient check puts on an op's outputs before differentiating.

Values in [-2, 2) made on the CPU from a seed, so every backend differentiates the same weighted sum
(the `backward` and `double_backward` properties, path-shapes' backward items).
"""

from __future__ import annotations

import torch


def fixed_cotangent(output: torch.Tensor, seed: int) -> torch.Tensor:
    """Pseudo-random values in [-2, 2) shaped like `output`, in its dtype and on its device, from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(output.shape, generator=generator, dtype=torch.float64) * 4 - 2
    return values.to(output.dtype).to(output.device)
