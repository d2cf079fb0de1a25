"""Token classes (CFGzip, seed 004): tokens a grammar cannot tell apart, computed offline, and a
matcher that runs an engine over one representative per class (specs/09-token-classes.md).

    compute_token_classes(compiled, relation)   classes.py: identity, byte_blocks, displacement
    TokenClasses.save / TokenClasses.load        with fingerprints of grammar, vocabulary, stops
    ClassMatcher                                 matcher.py: the matcher API over the classes
"""

from .classes import (RELATIONS, TokenClasses, TokenClassesMismatch, TokenClassesUnsupported, compute_token_classes)
from .matcher import ClassMatcher, compressed_tokenizer_info

__all__ = ["RELATIONS", "TokenClasses", "TokenClassesMismatch", "TokenClassesUnsupported", "compute_token_classes",
           "ClassMatcher", "compressed_tokenizer_info"]
