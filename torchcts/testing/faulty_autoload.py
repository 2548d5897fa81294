"""torch.backends entry point for the faulty device, kept apart from the device's own modules.

`import torch` calls `autoload()` while torch finishes importing. If that import of torch was
itself started by `import torchcts.testing.faulty` (whose modules import torch), the device
package is only half-built: the request is remembered and the package registers the device
when its import completes. Nothing here imports torch or TorchCTS at module level.
"""

from __future__ import annotations

import sys
import warnings

requested = False


def autoload() -> None:
    """Register the faulty device; never let an error escape into `import torch`."""
    global requested
    package = sys.modules.get("torchcts.testing.faulty")
    if package is not None and not getattr(package, "_ready", False):
        requested = True  # torchcts.testing.faulty is mid-import; it calls enable() when done
        return
    try:
        from torchcts.testing import faulty

        faulty.enable()
    except Exception as exc:  # noqa: BLE001 - import torch must survive whatever happens here
        warnings.warn(f"torchcts: the faulty device was not registered: {exc}", RuntimeWarning, stacklevel=2)
