"""Token classes: tokens an engine cannot tell apart in a grammar, one representative each (CFGzip
§3.1, Definition 1 and Theorem 1; ../shared/SEED_SYSTEMS.md §3.4).

Offline, every token id gets a class id and every class a representative; online an engine runs
over the representatives and its mask over classes is gathered back to tokens (matcher.py). By
Theorem 1 (tokens congruent one by one give congruent sequences) the masks are the same as over
the whole vocabulary, as long as each class lies inside one class of the congruence ≡_L. The
relations here are such refinements:

    identity       each token its own class                     (a baseline: nothing saved)
    byte_blocks    tokens with one block signature (blocks.py)  (lossless by construction)
    displacement   tokens with one displacement (displacement.py, CFGzip's relation: Theorem 2)

Each displacement class is a union of byte_blocks classes (the walk starts from signatures), so
it never has more classes.

Beside the regular classes, the engine semantics add two (classes are numbered regular first):

    STOP     every stop token (all allowed exactly when the bytes read are a sentence)
    NEVER    special and padding ids, and under displacement the tokens valid nowhere (an empty
             displacement): never passed to the inner engine, never allowed, even where a stop
             token is (CFGzip's public code gathers its ignored tokens as the last class, which is
             the stop class there: not copied)

Token-level intrinsics (`Token`, `ExcludeToken`, `TokenTagDispatch`: token sets) refine the
classes: two tokens share a class only when they also lie in the same token sets, so a class is
wholly inside or outside each set (and the inner engine's sets are rewritten over classes,
matcher.py). Equal bytes' behaviour plus equal membership is equal behaviour on both kinds of
edge.

The representative of a class is its shortest token, then one without a NUL byte, then the
lowest id. Refused with TokenClassesUnsupported, by name: token and character budgets (a budget
depends on where rule boundaries fall inside a token), unordered members.

A saved file (`save`, `load`) holds the class of every token and a header with fingerprints of
the grammar, the vocabulary, the stops and the relation; loading it for another vocabulary or
stop set raises TokenClassesMismatch.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..exceptions import TokenClassesMismatch, TokenClassesUnsupported
from .blocks import block_signatures, byte_blocks

RELATIONS = ("identity", "byte_blocks", "displacement")
FORMAT_VERSION = "xg2ref-token-classes-v1"


@dataclass
class TokenClasses:
    """The classes of one grammar over one vocabulary (module docstring).

    `class_of`: int32[vocab_size], the class of each token id; regular classes are
    0..n_regular-1, then `stop_class`, then `never_class`. `representatives`: int32[n_regular],
    the representative token of each regular class. `fingerprints`: grammar, vocabulary, stops,
    relation. `stats`: counts and seconds.
    """

    relation: str
    class_of: np.ndarray
    representatives: np.ndarray
    fingerprints: dict
    stats: dict = field(default_factory=dict)

    @property
    def n_regular(self) -> int:
        return int(len(self.representatives))

    @property
    def stop_class(self) -> int:
        return self.n_regular

    @property
    def never_class(self) -> int:
        return self.n_regular + 1

    @property
    def vocab_size(self) -> int:
        return int(len(self.class_of))

    def members(self, cls: int) -> np.ndarray:
        """The token ids of class `cls`."""
        return np.flatnonzero(self.class_of == cls)

    def save(self, path) -> None:
        """`path`.npz: the arrays; the header (relation, fingerprints, stats) as JSON inside."""
        header = {"version": FORMAT_VERSION, "relation": self.relation, "fingerprints": self.fingerprints,
                  "stats": self.stats}
        np.savez_compressed(Path(path), class_of=self.class_of, representatives=self.representatives,
                            header=np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8))

    @staticmethod
    def load(path, compiled=None) -> "TokenClasses":
        """The classes saved at `path`; with `compiled` (a CompiledGrammar), refused with
        TokenClassesMismatch unless they were computed for its grammar, vocabulary and stops."""
        try:
            with np.load(Path(path), allow_pickle=False) as data:
                header = json.loads(bytes(data["header"]).decode("utf-8"))
                classes = TokenClasses(header["relation"], data["class_of"].astype(np.int32),
                                       data["representatives"].astype(np.int32), header["fingerprints"],
                                       header.get("stats", {}))
        except (OSError, KeyError, ValueError) as err:
            raise TokenClassesMismatch(f"{path}: not a token classes file ({err})") from None
        if header.get("version") != FORMAT_VERSION:
            raise TokenClassesMismatch(f"{path}: version {header.get('version')!r}, expected {FORMAT_VERSION!r}")
        if compiled is not None:
            want = fingerprints(compiled, classes.relation)
            for key in ("vocabulary", "stops", "grammar"):
                if want[key] != classes.fingerprints.get(key):
                    raise TokenClassesMismatch(f"{path}: computed for another {key} than this compiled grammar's")
        return classes


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


def fingerprints(compiled, relation: str) -> dict:
    """The grammar's text, the decoded vocabulary (with its size), the stop ids, the relation."""
    info = compiled.tokenizer_info
    return {"grammar": _digest(str(compiled.grammar)),
            "vocabulary": _digest(info.vocab_size, *info.decoded_vocab),
            "stops": _digest(*info.stop_token_ids), "relation": relation}


def check_supported(compiled) -> None:
    """TokenClassesUnsupported for the constructs the module docstring lists."""
    fsms = compiled.fsms
    if any(b >= 0 for b in fsms.max_tokens) or any(b >= 0 for b in fsms.max_chars):
        raise TokenClassesUnsupported("token and character budgets (max_tokens, max_chars): a budget depends on "
                                      "where rule boundaries fall inside a token")
    if any(u is not None for u in fsms.unordered):
        raise TokenClassesUnsupported("unordered members (any_order objects): their member sets are not "
                                      "tracked by the classes")


def token_set_membership(compiled, regular: list) -> Optional[list]:
    """For each regular token, the indices of the grammar's token sets holding it (None when the
    grammar has none)."""
    sets = [(frozenset(ts.ids), ts.exclude) for ts in compiled.fsms.token_sets]
    if not sets:
        return None
    return [tuple(k for k, (ids, exclude) in enumerate(sets) if (t in ids) != exclude) for t in regular]


def compute_token_classes(compiled, relation: str = "byte_blocks", *, max_frontier: Optional[int] = None,
                          progress=None) -> TokenClasses:
    """The token classes of a CompiledGrammar under `relation` (RELATIONS); `max_frontier`: the
    displacement walk's limit per trie node (displacement.MAX_FRONTIER by default);
    `progress(done, total)`: called as the displacement walk goes through the signatures."""
    if relation not in RELATIONS:
        raise ValueError(f"unknown relation {relation!r}: {', '.join(RELATIONS)}")
    check_supported(compiled)
    start = time.perf_counter()
    info = compiled.tokenizer_info
    decoded = info.decoded_vocab + [b""] * (info.vocab_size - len(info.decoded_vocab))
    stops, special = set(info.stop_token_ids), set(info.special_token_ids)
    regular = [t for t in range(info.vocab_size) if t not in stops and t not in special]
    stats: dict = {}
    if relation == "identity":
        keys = dict(zip(regular, regular))
    elif relation == "byte_blocks":
        blocks = byte_blocks(compiled.arrays)
        keys = dict(zip(regular, block_signatures([decoded[t] for t in regular], blocks)))
        stats["byte_blocks"] = int(blocks.max()) + 1
    else:
        from .displacement import MAX_FRONTIER, displacement_keys

        found, stats = displacement_keys(compiled, [decoded[t] for t in regular], max_frontier or MAX_FRONTIER,
                                         progress)
        keys = dict(zip(regular, found))  # (None: valid nowhere as bytes)
        stats["fallback_tokens"] = sum(1 for k in found if k is not None and k[0] == "s")
    membership = token_set_membership(compiled, regular)
    if membership is not None:  # refined by token sets; a token in some set is valid somewhere
        keys = {t: (keys[t], m) if keys[t] is not None or m else None for t, m in zip(regular, membership)}
        stats["token_sets"] = len(compiled.fsms.token_sets)
    if relation == "displacement":
        keys = {t: k for t, k in keys.items() if k is not None}
        stats["dead_tokens"] = len(regular) - len(keys)
    by_key: dict = {}
    for t in regular:
        if t in keys:
            by_key.setdefault(keys[t], []).append(t)
    groups = sorted(by_key.values(), key=lambda members: min(members))
    n = len(groups)
    class_of = np.full(info.vocab_size, n + 1, dtype=np.int32)  # NEVER unless set below
    representatives = np.zeros(n, dtype=np.int32)
    for cls, members in enumerate(groups):
        class_of[members] = cls
        representatives[cls] = min(members, key=lambda t: (len(decoded[t]), b"\x00" in decoded[t], t))
    class_of[sorted(stops)] = n
    stats.update({"tokens": info.vocab_size, "regular_classes": n, "stop_tokens": len(stops),
                  "never_tokens": int(np.sum(class_of == n + 1)), "seconds": round(time.perf_counter() - start, 4)})
    return TokenClasses(relation, class_of, representatives, fingerprints(compiled, relation), stats)


def representative_vocabulary(classes: TokenClasses, tokenizer_info) -> list:
    """The decoded bytes of each regular class's representative, then b"" for the stop entry:
    the vocabulary an inner engine runs over (matcher.py)."""
    return [tokenizer_info.token_bytes(int(t)) for t in classes.representatives] + [b""]


def check_vocabulary(classes: TokenClasses, tokenizer_info) -> None:
    """TokenClassesMismatch unless `classes` cover exactly this vocabulary's ids."""
    if classes.vocab_size != tokenizer_info.vocab_size:
        raise TokenClassesMismatch(f"the classes cover {classes.vocab_size} token ids, the vocabulary has "
                                   f"{tokenizer_info.vocab_size}")


def class_summary(classes: TokenClasses, limit: Optional[int] = None) -> str:
    """One line: relation, classes, tokens, and the largest classes' sizes."""
    sizes = np.bincount(classes.class_of, minlength=classes.never_class + 1)[:classes.n_regular]
    largest = sorted(sizes.tolist(), reverse=True)[:limit or 5]
    return (f"{classes.relation}: {classes.n_regular} regular classes over {classes.vocab_size} tokens "
            f"(+ stop, never: {classes.stats.get('never_tokens', 0)} tokens); largest {largest}")
