# TorchCTS target manifest: torch.compile(backend="inductor") on cpu, compared with eager CPU.
#
# Shipped with TorchCTS as manifests/targets/inductor.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device cpu --compile inductor` uses it when no --manifest is given and ./manifest.py does not exist
# (the command says so). For a release, copy it next to the backend, review it there and pass --manifest.
#
# inductor generates C++/OpenMP kernels for CPU: it needs a C++ compiler (g++ or clang) on the machine; the
# first run compiles for minutes, later runs use inductor's cache.
# Only what torch.compile changes is claimed: the device's runtime (serialization, streams, events, the
# allocator, device API, DataLoader) is CPU's own and the cpu target tests it.
# Reviewed against torch 2.13.0+cpu on this project's CI machines: check-manifest --strict, and forward,
# backward, out and inplace under --compile inductor on add, abs, sum and matmul (float32, bfloat16; one
# example each: 26 items, all passed). The other claims follow aot_eager's measurements; what differs by
# design under inductor (its own random stream) is unclaimed.

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
        "rng":                           False,   # inductor draws its own random stream (config.fallback_random)
        "device_generator":              False,   # the CPU runtime, not the compiler: the cpu target tests it
        "rng_distributions":             False,   # not measured under inductor
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
