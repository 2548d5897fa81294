# TorchCTS target manifest: xpu (Intel GPUs through torch.xpu), single device.
#
# Shipped with TorchCTS as manifests/targets/xpu.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device xpu` uses it when no --manifest is given and ./manifest.py does not exist (the command says so).
# For a release, copy it next to the backend, review it there and pass --manifest (docs/release.md).
#
# Reviewed against the torch 2.13 documentation and source (torch.cuda / torch.mps / torch.xpu pages,
# the dtype and autocast notes, torch/optim/_fused kernels' device lists); NOT probed: no such device was
# available when it was written. Probe it on the device before relying on it:
#   torchcts init --probe --device xpu --template complete --output probed.py   (then diff the claims)
#
# Level 6: every single-device capability claimed below; sparse, nested and fp8 stay unclaimed until measured.

manifest = {
    "manifest_version": 1,
    "device_name": "xpu",
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
        "bfloat16":          True,
        "float32":           True,
        "float64":           True,     # native on data-center GPUs (Max); some client GPUs emulate it
        "complex32":         False,    # chalf: few XPU kernels
        "complex64":         True,
        "complex128":        True,
        "float8_e4m3fn":     False,    # no XPU float8 kernels documented for torch 2.13 beyond casts
        "float8_e5m2":       False,    # as float8_e4m3fn
        "float8_e4m3fnuz":   False,    # the fnuz formats are ROCm's (MI300); not CUDA's
        "float8_e5m2fnuz":   False,    # the fnuz formats are ROCm's (MI300); not CUDA's
        "float8_e8m0fnu":    False,    # scale dtype of MX formats: casts only
    },
    "capabilities": {
        "inference":                     True,
        "training":                      True,
        "serialization":                 True,    # torch.save/load keep the device
        "compile":                       True,    # inductor generates Triton kernels for XPU
        "rng":                           True,    # Philox generator per device
        "device_generator":              True,    # torch.Generator(device='xpu')
        "rng_distributions":             True,
        "double_backward":               True,
        "gradcheck":                     True,    # needs float64: see the dtype note
        "gradient_checkpointing":        True,
        "autocast":                      True,    # torch.autocast('xpu'): float16 and bfloat16
        "fused_optimizer":               True,    # fused=True supports xpu (Adam, AdamW, SGD)
        "dataloader":                    True,    # pin_memory and non_blocking transfers
        "module_hooks":                  True,
        "channels_last":                 True,    # oneDNN convolutions
        "sparse":                        False,   # sparse kernels for XPU are partial in torch 2.13
        "nested":                        False,   # NestedTensor kernels for XPU are partial in torch 2.13
        "foreach":                       True,    # fast multi-tensor kernels
        "fp8":                           False,   # no _scaled_mm for XPU documented in torch 2.13
        "quantized_container_plumbing":  True,    # packed bytes are plain uint8 tensors
        "native_quantization":           False,   # torch.ao quantized kernels are CPU's
        "custom_quantized_decode":       False,   # no decoders ship with torch; a backend's own manifest declares them
        "pinned_memory":                 True,    # pin_memory for XPU host transfers
        "streams":                       True,    # torch.xpu.Stream
        "events":                        True,    # torch.xpu.Event(enable_timing=True)
        "deterministic":                 True,    # use_deterministic_algorithms
        "guard_alloc":                   True,    # the XPU caching allocator raises torch.OutOfMemoryError
        "device_api":                    True,    # torch.xpu: device_count, synchronize, memory stats
        "multi_device":                  False,   # needs device_count >= 2: claim it on a multi-GPU host
        "ieee754":                       True,    # IEEE arithmetic
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
