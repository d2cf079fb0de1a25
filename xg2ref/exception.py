"""The exception classes under the module path xgrammar 0.2.8 gives them (`xgrammar.exception`).

They are xg2ref's own classes (xg2ref/exceptions.py): each subclasses both ValueError and
RuntimeError, so code that catches xgrammar's RuntimeError subclasses catches these too.
"""

from .exceptions import DeserializeFormatError, DeserializeVersionError, InvalidJSONError, InvalidStructuralTagError

__all__ = ["DeserializeFormatError", "DeserializeVersionError", "InvalidJSONError", "InvalidStructuralTagError"]
