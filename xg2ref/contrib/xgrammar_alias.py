"""Run code written for xgrammar on xg2ref without editing it: `import xgrammar` gives xg2ref.

Serving engines (vLLM, SGLang, TensorRT-LLM) import xgrammar by name inside their own
modules, so swapping the engine under them means making that name resolve to xg2ref:

    import xg2ref.contrib.xgrammar_alias as alias
    alias.install()                  # before the serving engine imports its xgrammar backend
    import xgrammar                  # xg2ref itself
    from xgrammar.kernels.apply_token_bitmask_inplace_cpu import apply_token_bitmask_inplace_cpu

`install()` puts an import hook first on `sys.meta_path` that answers `xgrammar` and every
`xgrammar.<path>` with the module `xg2ref.<path>` (the same module object, so
`xgrammar.GrammarMatcher is xg2ref.GrammarMatcher`). A path that xg2ref lacks fails as an
ImportError naming both. It refuses (RuntimeError) when the real xgrammar is already imported
in this process, since objects from the two packages would then meet. `uninstall()` removes
the hook and the aliases it made.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Optional

ALIAS = "xgrammar"
TARGET = "xg2ref"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        try:
            if importlib.util.find_spec(self.target) is None:
                module = _attribute_module(self.target)
            else:
                module = importlib.import_module(self.target)
        except ImportError as err:
            raise ImportError(f"{spec.name} is aliased to {self.target}, which cannot be imported: {err}",
                              name=spec.name) from None
        self.own_spec = module.__spec__  # the import system overwrites it with the alias's spec
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self.own_spec  # the target module ran when it was imported; keep its own spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path=None, target=None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS):]
        if importlib.util.find_spec(real) is None and _attribute_module(real) is None:
            return None  # the usual ModuleNotFoundError for xgrammar.<path>
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


def _attribute_module(real: str):
    """Modules xg2ref exposes as attributes rather than files (`xg2ref.hf`)."""
    parent, _, name = real.rpartition(".")
    if not parent:
        return None
    try:
        value = getattr(importlib.import_module(parent), name, None)
    except ImportError:
        return None
    return value if isinstance(value, type(sys)) else None


_FINDER = _AliasFinder()


def install() -> None:
    """Make `import xgrammar` (and every `xgrammar.<path>`) give xg2ref's modules."""
    existing = sys.modules.get(ALIAS)
    if existing is not None and not getattr(existing, "__name__", "").startswith(TARGET):
        raise RuntimeError("the real xgrammar is already imported in this process; install the xg2ref alias "
                           "before anything imports xgrammar")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Remove the import hook and every `xgrammar*` alias it made."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            del sys.modules[name]


def installed() -> bool:
    return _FINDER in sys.meta_path
