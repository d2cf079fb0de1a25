"""Numba kernels over flat numpy arrays (earley, mask_cache, mask_fill, token_reads,
apply_bitmask), and, under the module names xgrammar 0.2.8 uses, its per-backend bitmask entry
points (`apply_token_bitmask_inplace_cpu`, `_cuda`, `_triton`, `_torch_compile`, `_torch`:
each re-exports the function of that name from xg2ref/apply_mask.py)."""
