# TorchCTS target manifest: meta, PyTorch's metadata-only device: shapes, dtypes, strides and errors, no values.
#
# Shipped with TorchCTS as manifests/targets/meta.py: `torchcts run|fuzz|show-skips|check-manifest|replay
# --device meta` uses it when no --manifest is given and ./manifest.py does not exist
# (the command says so). For a release, copy it next to the backend, review it there and pass --manifest.
#
# Reviewed against torch 2.13.0+cpu on this project's CI machines: every scenario property run on meta at level
# 8 (float32, uint8, float8_e4m3fn; one example each), the OpInfo properties on ten ops in every dtype, and
# `check-manifest --strict`. `torchcts init --probe --device meta` says nothing useful here: its probes
# compare values, which meta has none of, so it drops every dtype.
# On meta TorchCTS compares dtype, shape, strides and errors (torchcts/engine/targets.py); a case whose output
# is sized by data (nonzero, unique, masked_select, .item()) is runtime_unavailable, not a finding. So only the
# capabilities whose properties say something without values are claimed; each False below says why.
# Known findings on torch 2.13 (reported, not hidden): the dispatch property reaches aten overloads without a
# Meta kernel (_add_relu, _aminmax, ...); meta's shift ops reject a bool shift CPU accepts; dtype_semantics:
# sub(uint8 or float32 tensor, False) returns a result on meta where CPU raises; serialization (to_cpu): a
# loaded transposed view differs from CPU's in one checked fact; errors (cat): meta accepts an out= tensor
# whose elements overlap, which CPU rejects.

manifest = {
    "manifest_version": 1,
    "device_name": "meta",
    "backend_import": None,
    "semantic_level": 5,
    "max_samples": 10,
    "supported_dtypes": {
        "bool":              True,    # meta tensors exist in every dtype; items follow CPU's OpInfo dtypes
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
        "inference":                     True,    # forward, out, inplace, layout, errors: metadata and errors
        "training":                      True,    # gradients' dtype, shape and strides
        "serialization":                 True,    # torch.save/load of meta tensors keeps metadata
        "compile":                       False,   # torch.compile targets are cpu --compile inductor|aot_eager
        "rng":                           False,   # needs values: meta has none
        "device_generator":              False,   # torch.Generator('meta'): not an accelerator (raises)
        "rng_distributions":             False,   # needs values: meta has none
        "double_backward":               True,    # second-order gradients' metadata
        "gradcheck":                     False,   # numerical gradients needs values: meta has none
        "gradient_checkpointing":        True,
        "autocast":                      False,   # torch.autocast has no meta device type
        "fused_optimizer":               False,   # optimizer steps are checked by value
        "dataloader":                    False,   # pinning and host transfers: runtime_unavailable on meta
        "module_hooks":                  True,
        "channels_last":                 True,    # memory formats are strides: meta keeps them
        "sparse":                        False,   # few sparse Meta kernels
        "nested":                        False,   # few NestedTensor Meta kernels
        "foreach":                       True,    # _foreach_* ops have Meta kernels
        "fp8":                           True,    # float8 tensors and _scaled_mm have Meta kernels
        "quantized_container_plumbing":  False,   # packed bytes are values
        "native_quantization":           False,   # no quantized Meta kernels
        "custom_quantized_decode":       False,   # decoded values
        "pinned_memory":                 False,   # no host memory behind meta
        "streams":                       False,   # meta has no streams
        "events":                        False,   # meta has no events
        "deterministic":                 False,   # determinism is about values: runtime_unavailable on meta
        "guard_alloc":                   False,   # meta allocates nothing: no out-of-memory to raise
        "device_api":                    False,   # there is no torch.meta device module
        "multi_device":                  False,   # one meta device
        "ieee754":                       False,   # special values are values
    },
    "hypothesis": {"max_examples": 20, "deadline": None, "derandomize": True, "seed": None},
}
