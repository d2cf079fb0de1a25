"""Integrations with other libraries (as xgrammar's `contrib`): `hf`, a logits processor for
Hugging Face transformers' `generate()`."""
