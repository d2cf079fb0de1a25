"""Integrations with other libraries (as xgrammar's `contrib`): `hf`, a logits processor for
Hugging Face transformers' `generate()`."""


def __getattr__(name: str):
    """`hf` on first use (it imports torch and transformers)."""
    if name == "hf":
        import importlib

        return importlib.import_module(".hf", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
