"""A seeded bug of the faulty device: the aten overloads it affects, when it fires, what it does."""

from __future__ import annotations

from typing import Any, Callable

import attrs

# Steps of the device that are no aten overload, named where a bug's `ops` names overloads: the device's torch.save
# (`bugs.after` sees the CPU data about to be written, and what it returns is written) ...
SAVE_STEP = "faulty.save"
# ... and its autocast kernels (`bugs.after` sees (op, class) and the dtype the policy chose; None: no cast)
AUTOCAST_STEP = "faulty.autocast"
# ... and its container decoders (decoders.py; `bugs.after` sees (format, packed, scale, zero_point, shape, dtype), all
# on the device, and the decoded device tensor)
DECODE_STEP = "faulty.decode"
# ... and its runtime (`torch.faulty`: runtime.py, memory.py, streams.py, pinned.py); `bugs.after` sees (args), value:
DEVICE_COUNT_STEP = "faulty.device_count"  # () and the count torch.faulty.device_count() returns
SET_DEVICE_STEP = "faulty.set_device"  # (current index, requested index) and the index made current
GUARD_EXIT_STEP = "faulty.guard_exit"  # (index the guard made current, index before it) and the one made current after
PEER_COPY_STEP = "faulty.peer_copy"  # (aten overload, target index, a source index) and the index its result lands on
CPU_OPERAND_STEP = "faulty.cpu_operand"  # (aten overload, device index) and True: an elementwise op given a non-scalar
# CPU tensor raises (False: it runs, reading the CPU tensor)
SEED_STEP = "faulty.manual_seed"  # (device index, seed) and the seed its generator gets
GENERATOR_STEP = "faulty.generator"  # (aten overload, device index) and the generator a random op given none draws from
# ... and its generator objects (the compiled part's steps, generators.py):
NEW_GENERATOR_STEP = "faulty.new_generator"  # (device index,) and the CPU generator a new generator gets
GENERATOR_CLONE_STEP = "faulty.generator_clone"  # (device index, the original's CPU generator) and the clone's
GENERATOR_SEED_STEP = "faulty.generator_seed"  # (device index, seed) and the seed the generator keeps
GENERATOR_ARGUMENT_STEP = "faulty.generator_argument"  # (aten overload, device index) and the CPU generator a random
# op given a device generator draws from
MEMORY_STATS_STEP = "faulty.memory_stats"  # (device index,) and the statistics dict
OUT_OF_MEMORY_STEP = "faulty.out_of_memory"  # (device index, bytes) and None: an allocation refused, about to raise
STREAM_WAIT_STEP = "faulty.stream_wait"  # (waiting stream, awaited stream) and True (False: no wait)
# (stream with queued work that read a freed storage, whether record_stream named that stream) and whether the block is
# handed out before that work ran (True: it reads the new contents)
BLOCK_REUSE_STEP = "faulty.block_reuse"
SYNCHRONIZE_STEP = "faulty.synchronize"  # (device index, current stream) and the streams with queued work to land
EVENT_QUERY_STEP = "faulty.event_query"  # (event,) and whether it is complete
ELAPSED_STEP = "faulty.elapsed_time"  # (start event, end event) and the milliseconds between them
PIN_STEP = "faulty.pin_memory"  # (source CPU tensor,) and its pinned copy
IS_PINNED_STEP = "faulty.is_pinned"  # (CPU tensor,) and whether it is pinned
RUNTIME_STEPS = (DEVICE_COUNT_STEP, SET_DEVICE_STEP, GUARD_EXIT_STEP, PEER_COPY_STEP, CPU_OPERAND_STEP, SEED_STEP,
                 GENERATOR_STEP, NEW_GENERATOR_STEP, GENERATOR_CLONE_STEP, GENERATOR_SEED_STEP, GENERATOR_ARGUMENT_STEP, MEMORY_STATS_STEP,
                 OUT_OF_MEMORY_STEP, STREAM_WAIT_STEP, BLOCK_REUSE_STEP, SYNCHRONIZE_STEP, EVENT_QUERY_STEP, ELAPSED_STEP, PIN_STEP, IS_PINNED_STEP)


@attrs.frozen
class Bug:
    """One seeded bug: the aten overloads it affects, when it fires, what it does."""

    name: str
    ops: tuple[str, ...]  # overloads as str(func) prints them: "aten.add.Tensor"
    condition: str
    description: str
    fires: Callable[[Any, tuple, dict], bool] = attrs.field(repr=False)
    perturb: Callable[[Any, tuple, dict, Any], Any] = attrs.field(repr=False)
    # or "crash" / "hang" / "missing-kernel" / "wrong-error" (raises another exception than CPU's): act before the op runs
    kind: str = "wrong-result"
    suite: str = "opinfo"  # the suite written to catch it: "opinfo" (the OpInfo properties) or a suite module's name
    # whether its condition reads only the call (its arguments, the device's settings): the selftest then reruns it on
    # the items where the clean run saw that condition hold (`would_fire`); False (a count kept across calls and
    # items): on every item of the ops or scenarios that reached its overloads
    precise: bool = True

    @property
    def in_all(self) -> bool:
        return self.kind in ("wrong-result", "missing-kernel", "wrong-error")


def argument(func: Any, args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
    """The value of argument `name` of a call of aten overload `func`, positional or keyword, else `default`
    (a generated call passes later arguments by keyword once it leaves one at its default)."""
    for position, arg in enumerate(func._schema.arguments):
        if arg.name == name:
            if name in kwargs:
                return kwargs[name]
            return args[position] if position < len(args) else default
    return default
