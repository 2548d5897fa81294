# TorchCTS target manifest: cuda (NVIDIA GPUs through torch.cuda), single device.
#
# Shipped with TorchCTS as manifests/targets/cuda.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device cuda` uses it when no --manifest is given and ./manifest.py does not exist (the command says so).
# For a release, copy it next to the backend, review it there and pass --manifest (docs/release.md).
#
# Reviewed against the torch 2.13 documentation and source (torch.cuda / torch.mps / torch.xpu pages,
# the dtype and autocast notes, torch/optim/_fused kernels' device lists); NOT probed: no such device was
# available when it was written. Probe it on the device before relying on it:
#   torchcts init --probe --device cuda --template complete --output probed.py   (then diff the claims)
#
# Level 6: every single-device capability; 7 adds the stress suite and multi-device tests, 8 release-depth
# stress. ROCm builds expose torch.cuda too: for AMD GPUs claim the fnuz float8 formats instead.

manifest = {
    "manifest_version": 1,
    "device_name": "cuda",
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
        "bfloat16":          True,     # native on sm80+, emulated on older GPUs
        "float32":           True,
        "float64":           True,
        "complex32":         False,    # chalf: a handful of CUDA ops (FFT, copies); claim per op once measured
        "complex64":         True,
        "complex128":        True,
        "float8_e4m3fn":     True,     # casts and copies everywhere; _scaled_mm needs sm89+ (fp8 capability)
        "float8_e5m2":       True,     # as float8_e4m3fn
        "float8_e4m3fnuz":   False,    # the fnuz formats are ROCm's (MI300); not CUDA's
        "float8_e5m2fnuz":   False,    # the fnuz formats are ROCm's (MI300); not CUDA's
        "float8_e8m0fnu":    False,    # scale dtype of MX formats: casts only
    },
    "capabilities": {
        "inference":                     True,
        "training":                      True,
        "serialization":                 True,    # torch.save/load keep the device
        "compile":                       True,    # inductor generates Triton kernels for CUDA
        "rng":                           True,    # Philox generator per device
        "device_generator":              True,    # torch.Generator(device='cuda')
        "rng_distributions":             True,
        "double_backward":               True,
        "gradcheck":                     True,    # float64 is native
        "gradient_checkpointing":        True,
        "autocast":                      True,    # torch.autocast('cuda'): float16, bfloat16; CUDA op lists
        "fused_optimizer":               True,    # fused=True: Adam, AdamW, SGD, Adagrad on CUDA
        "dataloader":                    True,    # pin_memory and non_blocking transfers
        "module_hooks":                  True,
        "channels_last":                 True,    # cuDNN convolutions prefer channels_last
        "sparse":                        True,    # COO, CSR, CSC, BSR, BSC (cuSPARSE)
        "nested":                        True,    # jagged and strided NestedTensors
        "foreach":                       True,    # fast multi-tensor kernels
        "fp8":                           True,    # _scaled_mm needs sm89+ (Ada, Hopper)
        "quantized_container_plumbing":  True,    # packed bytes are plain uint8 tensors
        "native_quantization":           False,   # torch.ao quantized kernels are CPU (fbgemm/qnnpack); CUDA has few
        "custom_quantized_decode":       False,   # no decoders ship with torch; a backend's own manifest declares them
        "pinned_memory":                 True,    # page-locked host memory, cudaMemcpyAsync
        "streams":                       True,    # torch.cuda.Stream
        "events":                        True,    # torch.cuda.Event(enable_timing=True)
        "deterministic":                 True,    # use_deterministic_algorithms (set CUBLAS_WORKSPACE_CONFIG=:4096:8)
        "guard_alloc":                   True,    # the caching allocator raises torch.OutOfMemoryError
        "device_api":                    True,    # torch.cuda: device_count, synchronize, memory stats
        "multi_device":                  False,   # needs device_count >= 2: claim it on a multi-GPU host
        "ieee754":                       True,    # IEEE arithmetic; subnormals kept (no flush-to-zero by default)
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
