"""xgrammar 0.2.8's module path for its torch_compile bitmask entry point (`xgrammar.kernels.apply_token_bitmask_inplace_torch_compile`),
so that code importing it from there runs on xg2ref; the function lives in xg2ref/apply_mask.py."""

from ..apply_mask import apply_token_bitmask_inplace_torch_compile

__all__ = ["apply_token_bitmask_inplace_torch_compile"]
