# TorchCTS target manifest: mps (Apple GPUs through Metal Performance Shaders).
#
# Shipped with TorchCTS as manifests/targets/mps.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device mps` uses it when no --manifest is given and ./manifest.py does not exist (the command says so).
# For a release, copy it next to the backend, review it there and pass --manifest (docs/release.md).
#
# Reviewed against the torch 2.13 documentation and source (torch.cuda / torch.mps / torch.xpu pages,
# the dtype and autocast notes, torch/optim/_fused kernels' device lists); NOT probed: no such device was
# available when it was written. Probe it on the device before relying on it:
#   torchcts init --probe --device mps --template complete --output probed.py   (then diff the claims)
#
# Level 6. No float64 on MPS: float64, complex128 and gradcheck are unclaimed.

manifest = {
    "manifest_version": 1,
    "device_name": "mps",
    "backend_import": None,
    "semantic_level": 6,
    "max_samples": 10,
    "supported_dtypes": {
        "bool":              True,     # every backend dtype
        "uint8":             True,
        "int8":              True,
        "int16":             True,
        "int32":             True,
        "int64":             True,
        "uint16":            False,    # a shell dtype: few eager kernels on any device (torch docs)
        "uint32":            False,    # a shell dtype: few eager kernels on any device (torch docs)
        "uint64":            False,    # a shell dtype: few eager kernels on any device (torch docs)
        "float16":           True,
        "bfloat16":          True,     # macOS 14 (Sonoma) or later
        "float32":           True,
        "float64":           False,    # MPS has no float64: torch raises when one is moved there
        "complex32":         False,    # no chalf kernels
        "complex64":         False,    # partial (macOS 14+): claim per op once measured
        "complex128":        False,    # needs float64
        "float8_e4m3fn":     False,    # no MPS float8 kernels
        "float8_e5m2":       False,    # no MPS float8 kernels
        "float8_e4m3fnuz":   False,    # no MPS float8 kernels
        "float8_e5m2fnuz":   False,    # no MPS float8 kernels
        "float8_e8m0fnu":    False,    # no MPS float8 kernels
    },
    "capabilities": {
        "inference":                     True,
        "training":                      True,
        "serialization":                 True,    # torch.save/load keep the device
        "compile":                       False,   # inductor's Metal backend is a prototype in torch 2.13
        "rng":                           True,    # MPS generator honours manual_seed
        "device_generator":              True,    # torch.Generator(device='mps')
        "rng_distributions":             True,
        "double_backward":               True,
        "gradcheck":                     False,   # gradcheck runs in float64, which MPS lacks
        "gradient_checkpointing":        True,
        "autocast":                      True,    # torch.autocast('mps'): float16, bfloat16 (macOS 14+)
        "fused_optimizer":               True,    # fused=True: Adam and AdamW on MPS
        "dataloader":                    True,
        "module_hooks":                  True,
        "channels_last":                 True,
        "sparse":                        False,   # MPS sparse kernels are few in torch 2.13
        "nested":                        False,   # no MPS NestedTensor kernels
        "foreach":                       True,    # foreach ops fall back to per-tensor kernels
        "fp8":                           False,   # no float8 on MPS
        "quantized_container_plumbing":  True,    # packed bytes are plain uint8 tensors
        "native_quantization":           False,   # torch.ao quantized kernels are CPU's
        "custom_quantized_decode":       False,   # no decoders ship with torch; a backend's own manifest declares them
        "pinned_memory":                 False,   # unified memory: torch documents pinning for CUDA and XPU hosts only
        "streams":                       False,   # torch.mps exposes no Stream API
        "events":                        True,    # torch.mps.Event(enable_timing=True), elapsed_time
        "deterministic":                 False,   # torch documents no deterministic-algorithm guarantees for MPS
        "guard_alloc":                   True,    # the MPS allocator raises out-of-memory past its watermark
        "device_api":                    True,    # torch.mps: device_count, synchronize, current_allocated_memory
        "multi_device":                  False,   # one GPU per Mac
        "ieee754":                       True,    # IEEE-754 float32, float16 (kernels built without fast math)
    },
    # packed quantized containers are plain uint8 tensors: every format moves and copies intact
    "supported_container_formats": [
        "int2_ternary", "int4_symmetric", "int4_symmetric_msb_first", "int4_asymmetric", "int4_asymmetric_msb_first",
        "uint4", "uint4_msb_first", "nf4", "fp4_e2m1", "fp4_bnb", "af4", "mxfp4", "nvfp4", "fp6_e3m2", "fp6_e2m3",
        "mxfp6_e3m2", "mxfp6_e2m3", "fp8_e4m3fn", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz", "int8_symmetric",
        "int8_asymmetric", "uint8", "e8m0fnu", "mxfp8_e4m3", "mxfp8_e5m2", "mxint8",
    ],
    "hardware": {"memory_model": "unified", "device_memory_gb": "auto", "system_memory_gb": "auto",
                 "oom_recoverable": True},
    "hypothesis": {"max_examples": 20, "deadline": None, "derandomize": True, "seed": None},
}
