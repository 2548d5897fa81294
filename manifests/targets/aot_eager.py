# TorchCTS target manifest: torch.compile(backend="aot_eager") on cpu, compared with eager CPU.
#
# Shipped with TorchCTS as manifests/targets/aot_eager.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device cpu --compile aot_eager` uses it when no --manifest is given and ./manifest.py does not exist
# (the command says so). For a release, copy it next to the backend, review it there and pass --manifest.
#
# aot_eager traces with dynamo and AOTAutograd and runs the graph with eager kernels: it proves the tracing,
# not code generation.
# Only what torch.compile changes is claimed: the device's runtime (serialization, streams, events, the
# allocator, device API, DataLoader) is CPU's own and the cpu target tests it.
# Reviewed against torch 2.13.0+cpu on this project's CI machines: check-manifest --strict, and the rng,
# deterministic, ieee754, training, module_hooks, gradient_checkpointing, fused_optimizer, foreach_optimizer,
# channels_last and copies properties under --compile aot_eager (float32, one example each: all passed or
# runtime_unavailable; tests/run runs forward on add and sum). Known finding on torch 2.13 (reported, not
# hidden): dtype_semantics (binary_promotion, scalar_promotion): the compiled graph raises where eager CPU
# does not.

manifest = {
    "manifest_version": 1,
    "device_name": "cpu",
    "backend_import": None,
    "semantic_level": 6,
    "max_samples": 10,
    "supported_dtypes": {
        "bool":              True,
        "uint8":             True,
        "int8":              True,
        "int16":             True,
        "int32":             True,
        "int64":             True,
        "uint16":            False,   # a shell dtype: few eager kernels to compile
        "uint32":            False,   # as uint16
        "uint64":            False,   # as uint16
        "float16":           True,
        "bfloat16":          True,
        "float32":           True,
        "float64":           True,
        "complex32":         False,   # chalf: few kernels
        "complex64":         True,
        "complex128":        True,
        "float8_e4m3fn":     False,   # float8 codegen on CPU is partial in torch 2.13
        "float8_e5m2":       False,   # as float8_e4m3fn
        "float8_e4m3fnuz":   False,   # as float8_e4m3fn
        "float8_e5m2fnuz":   False,   # as float8_e4m3fn
        "float8_e8m0fnu":    False,   # as float8_e4m3fn
    },
    "capabilities": {
        "inference":                     True,    # every op through torch.compile, compared with eager CPU
        "training":                      True,    # gradients through the compiled graph (AOTAutograd)
        "serialization":                 False,   # the CPU runtime, not the compiler: the cpu target tests it
        "compile":                       True,    # compile_modules: whole modules compiled
        "rng":                           True,    # the graph runs eager's random kernels
        "device_generator":              False,   # the CPU runtime, not the compiler: the cpu target tests it
        "rng_distributions":             True,    # eager's random kernels
        "double_backward":               False,   # compiled graphs do not support double backward (torch raises)
        "gradcheck":                     False,   # recompiles per perturbation: the cpu target checks it
        "gradient_checkpointing":        True,
        "autocast":                      True,    # dynamo traces autocast regions (not measured here)
        "fused_optimizer":               True,
        "dataloader":                    False,   # the CPU runtime, not the compiler: the cpu target tests it
        "module_hooks":                  True,
        "channels_last":                 True,
        "sparse":                        False,   # dynamo does not trace sparse tensors: graph breaks run eager
        "nested":                        False,   # NestedTensor support in torch.compile is partial
        "foreach":                       True,
        "fp8":                           False,   # see the float8 dtypes
        "quantized_container_plumbing":  False,   # the CPU runtime, not the compiler: the cpu target tests it
        "native_quantization":           False,   # quantized tensors are not traced by dynamo
        "custom_quantized_decode":       False,   # no decoders ship with torch
        "pinned_memory":                 False,   # the CPU runtime, not the compiler: the cpu target tests it
        "streams":                       False,   # the CPU runtime, not the compiler: the cpu target tests it
        "events":                        False,   # the CPU runtime, not the compiler: the cpu target tests it
        "deterministic":                 True,
        "guard_alloc":                   False,   # the CPU runtime, not the compiler: the cpu target tests it
        "device_api":                    False,   # the CPU runtime, not the compiler: the cpu target tests it
        "multi_device":                  False,   # one CPU device
        "ieee754":                       True,    # special values through the compiled kernels
    },
    "hypothesis": {"max_examples": 20, "deadline": None, "derandomize": True, "seed": None},
}
