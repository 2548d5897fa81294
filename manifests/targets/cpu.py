# TorchCTS target manifest: cpu, validation mode (`torchcts run --validation`): CPU against its own oracle.
#
# Shipped with TorchCTS as manifests/targets/cpu.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --validation (or --device cpu)` uses it when no --manifest is given and ./manifest.py does not exist
# (the command says so).
# For a release, copy it next to the backend, review it there and pass --manifest (docs/release.md).
#
# Reviewed against torch 2.13.0+cpu on this project's x86-64 CI machines: the capability probes of
# `torchcts run --device cpu` (probes.jsonl) pass for every capability but pinned_memory ("Cannot access
# accelerator device when none is available") and events ("cpu backend doesn't support events"), both
# unclaimed below; `check-manifest --strict` is clean. In validation every case runs on CPU and on the CPU
# oracle, so every dtype is claimed: an OpInfo makes items only for the dtypes it lists for CPU, and a
# failure is a harness bug, never a CPU one. The streams, device_api and guard_alloc suites document what
# CPU lacks (torch.cpu.Stream has no synchronize): those scenarios are runtime_unavailable, not failures.

manifest = {
    "manifest_version": 1,
    "device_name": "cpu",
    "backend_import": None,
    "semantic_level": 8,
    "max_samples": 10,
    "supported_dtypes": {
        "bool":              True,    # validation: every dtype CPU's OpInfos list
        "uint8":             True,
        "int8":              True,
        "int16":             True,
        "int32":             True,
        "int64":             True,
        "uint16":            True,
        "uint32":            True,
        "uint64":            True,
        "float16":           True,
        "bfloat16":          True,
        "float32":           True,
        "float64":           True,
        "complex32":         True,
        "complex64":         True,
        "complex128":        True,
        "float8_e4m3fn":     True,
        "float8_e5m2":       True,
        "float8_e4m3fnuz":   True,
        "float8_e5m2fnuz":   True,
        "float8_e8m0fnu":    True,
    },
    "capabilities": {
        "inference":                     True,
        "training":                      True,
        "serialization":                 True,
        "compile":                       True,    # compile_modules: inductor (needs a C++ compiler) and aot_eager
        "rng":                           True,
        "device_generator":              True,    # torch.Generator('cpu')
        "rng_distributions":             True,
        "double_backward":               True,
        "gradcheck":                     True,
        "gradient_checkpointing":        True,
        "autocast":                      True,    # torch.autocast('cpu'): bfloat16, float16; the CPU op lists
        "fused_optimizer":               True,    # fused=True on CPU: Adam, AdamW, SGD, Adagrad
        "dataloader":                    True,
        "module_hooks":                  True,
        "channels_last":                 True,
        "sparse":                        True,    # COO, CSR, CSC, BSR, BSC
        "nested":                        True,
        "foreach":                       True,    # per-tensor fallback
        "fp8":                           True,    # float8 casts; _scaled_mm where CPU has a kernel
        "quantized_container_plumbing":  True,
        "native_quantization":           True,    # fbgemm (x86) or qnnpack (ARM) kernels
        "custom_quantized_decode":       False,   # no decoders ship with torch
        "pinned_memory":                 False,   # pinning needs an accelerator: a CPU-only build raises
        "streams":                       True,    # torch.cpu.Stream; synchronize/record_stream runtime_unavailable
        "events":                        False,   # the probe fails: cpu backend doesn't support events
        "deterministic":                 True,
        "guard_alloc":                   True,    # a 2**50-byte request raises CPU's RuntimeError
        "device_api":                    True,    # torch.cpu: device_count, current_device, synchronize
        "multi_device":                  False,   # one CPU device
        "ieee754":                       True,
    },
    # packed quantized containers are plain uint8 tensors: every format moves and copies intact
    "supported_container_formats": [
        "int2_ternary", "int4_symmetric", "int4_symmetric_msb_first", "int4_asymmetric", "int4_asymmetric_msb_first",
        "uint4", "uint4_msb_first", "nf4", "fp4_e2m1", "fp4_bnb", "af4", "mxfp4", "nvfp4", "fp6_e3m2", "fp6_e2m3",
        "mxfp6_e3m2", "mxfp6_e2m3", "fp8_e4m3fn", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz", "int8_symmetric",
        "int8_asymmetric", "uint8", "e8m0fnu", "mxfp8_e4m3", "mxfp8_e5m2", "mxint8",
    ],
    "hypothesis": {"max_examples": 20, "deadline": None, "derandomize": True, "seed": None},
}
