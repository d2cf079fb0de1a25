"""WGrammar's allowable token sets (WGrammar §3.2), over one vocabulary, interned by content.

WGrammar's operators read token ids, never bytes: a character class of the template becomes the
set of tokens made only of such characters, and a literal becomes the ids of its tokenization.
The universe is the vocabulary's *regular* tokens V: non-empty bytes, neither special nor a stop
token (stop and special tokens never match a token set, as with `Token(...)` in xg2ref's grammars,
xg2ref/intrinsics/token_sets.py). So

    chars(C)        = { t in V : t's bytes are valid UTF-8 and every code point of it is in C }
    literal(s)      = the greedy longest-match tokenization of s over V (each step takes the
                      longest regular token that is a prefix of what is left)
    complement(S)   = V \\ S,   union, difference: as sets

A set is interned by its members: two requests that build the same set get the same id, and
that id is what `GlobalMaskCache` keys masks by (cache.py), so set ids are shared process-wide
per vocabulary (`TokenSets.for_vocabulary`). Interning compares the member arrays themselves
(a dict keyed by their bytes), so equal ids mean equal sets, never a hash collision.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Callable, Union

import numpy as np

from ...exceptions import XG2RefError
from ...kernels.operator_masks import write_allowed


class OperatorProgramError(XG2RefError):
    """An operator program, a token set or a template that cannot be built (the message says why)."""


def vocabulary_fingerprint(info) -> str:
    """A digest of the decoded vocabulary, its size, the stop and the special ids."""
    h = hashlib.sha256()
    for part in [info.vocab_size, *info.stop_token_ids, b"|", *info.special_token_ids, b"|", *info.decoded_vocab]:
        h.update(part if isinstance(part, bytes) else str(part).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


class TokenSets:
    """The interned token sets of one vocabulary (module docstring)."""

    _BY_VOCABULARY: dict = {}
    _LOCK = threading.Lock()

    @classmethod
    def for_vocabulary(cls, info) -> "TokenSets":
        """The process-wide interner of `info`'s vocabulary (one per fingerprint)."""
        key = vocabulary_fingerprint(info)
        with cls._LOCK:
            sets = cls._BY_VOCABULARY.get(key)
            if sets is None:
                sets = cls._BY_VOCABULARY[key] = cls(info, key)
        return sets

    def __init__(self, info, fingerprint: str = "") -> None:
        self.info = info
        self.fingerprint = fingerprint or vocabulary_fingerprint(info)
        self.vocab_size = info.vocab_size
        self.n_words = (self.vocab_size + 31) // 32
        decoded = info.decoded_vocab
        self._bytes = decoded + [b""] * (self.vocab_size - len(decoded))
        regular = np.array([len(b) > 0 for b in self._bytes], dtype=np.bool_)
        regular[list(info.special_token_ids)] = False
        regular[list(info.stop_token_ids)] = False
        self.regular = regular
        self.regular_ids = np.flatnonzero(regular).astype(np.int32)
        self.stop_ids = np.array(sorted(info.stop_token_ids), dtype=np.int32)
        self._by_token = {self._bytes[t]: int(t) for t in self.regular_ids[::-1]}  # bytes -> lowest id
        self._longest = max((len(self._bytes[t]) for t in self.regular_ids), default=0)
        self._ids: dict[bytes, int] = {}
        self._by_ranges: dict = {}  # code point ranges -> the set of chars(ranges)
        self._by_operation: dict = {}  # (operation, set ids) -> the resulting set
        self._regular_words = np.zeros(self.n_words, dtype=np.uint32)
        write_allowed(self.regular_ids, self._regular_words)
        self._code_points = None  # (code points, owner index, valid) of the regular tokens, when first needed
        self._members: list[np.ndarray] = []
        self._words: list[np.ndarray] = []
        self._lock = threading.Lock()
        self.mask_cache = None  # the GlobalMaskCache of these set ids (cache.py), made when first asked

    # ---- interning ----------------------------------------------------------------------

    def intern(self, ids) -> int:
        """The id of the set of regular tokens `ids` (sorted, duplicates dropped); a token that is
        out of range or not regular is refused by name."""
        members = np.unique(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64))
        if len(members) and (members[0] < 0 or members[-1] >= self.vocab_size):
            bad = members[(members < 0) | (members >= self.vocab_size)][0]
            raise OperatorProgramError(f"token id {bad} is outside the vocabulary [0, {self.vocab_size})")
        if len(members) and not self.regular[members].all():
            bad = int(members[~self.regular[members]][0])
            raise OperatorProgramError(f"token {bad} ({self._bytes[bad]!r}) is a stop, special or empty token: "
                                       "a token set holds regular tokens only")
        members = members.astype(np.int32)
        key = members.tobytes()
        with self._lock:
            found = self._ids.get(key)
            if found is not None:
                return found
            words = np.zeros(self.n_words, dtype=np.uint32)
            write_allowed(members, words)
            members.setflags(write=False)
            words.setflags(write=False)
            self._members.append(members)
            self._words.append(words)
            self._ids[key] = len(self._members) - 1
            return len(self._members) - 1

    def __len__(self) -> int:
        return len(self._members)

    def check(self, set_id) -> int:
        """`set_id` when it names a set of this interner, else OperatorProgramError."""
        if isinstance(set_id, bool) or not isinstance(set_id, (int, np.integer)) or not 0 <= set_id < len(self._members):
            raise OperatorProgramError(f"set id {set_id!r} is not a set of this vocabulary's TokenSets "
                                       f"({len(self._members)} sets)")
        return int(set_id)

    def members(self, set_id: int) -> np.ndarray:
        """int32[]: the set's token ids, sorted (read-only)."""
        return self._members[self.check(set_id)]

    def words(self, set_id: int) -> np.ndarray:
        """uint32[ceil(vocab_size / 32)]: the set as bitmask words (read-only)."""
        return self._words[self.check(set_id)]

    def contains(self, set_id: int, token_id: int) -> bool:
        return bool(self.words(set_id)[token_id >> 5] >> (token_id & 31) & 1)

    def describe(self, set_id: int, limit: int = 4) -> str:
        """A few members' texts, for error messages."""
        members = self.members(set_id)
        shown = ", ".join(repr(self._bytes[t].decode("utf-8", "replace")) for t in members[:limit])
        more = f", ... ({len(members)} tokens)" if len(members) > limit else ""
        return "{" + shown + more + "}"

    # ---- building sets ------------------------------------------------------------------

    def ids(self, *token_ids: int) -> int:
        return self.intern(token_ids)

    def chars(self, char_class: Union[str, Callable[[str], bool], tuple]) -> int:
        """The regular tokens whose bytes are valid UTF-8 and whose every code point lies in
        `char_class`: code point ranges ((lo, hi), ...), a regex character class such as "[0-9]"
        or "[^<>]" (Python's `re`), or a predicate on one character. Ranges are the fast way
        (one vectorized pass over the vocabulary's code points, remembered per ranges)."""
        if isinstance(char_class, tuple):
            return self._chars_in_ranges(tuple((int(lo), int(hi)) for lo, hi in char_class))
        if isinstance(char_class, str):
            try:
                one = re.compile(f"(?:{char_class})+", re.DOTALL)
            except re.error as err:
                raise OperatorProgramError(f"character class {char_class!r}: {err}") from None
            keep = one.fullmatch
        else:
            def keep(text: str) -> bool:
                return all(char_class(c) for c in text)
        out = []
        for t in self.regular_ids:
            try:
                text = self._bytes[t].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if keep(text):
                out.append(int(t))
        return self.intern(out)

    def _chars_in_ranges(self, ranges: tuple) -> int:
        found = self._by_ranges.get(ranges)
        if found is None:
            if self._code_points is None:
                self._code_points = _code_points(self._bytes, self.regular_ids)
            points, owner, valid = self._code_points
            inside = np.zeros(len(points), dtype=np.bool_)
            for lo, hi in ranges:
                inside |= (points >= lo) & (points <= hi)
            outside = np.bincount(owner[~inside], minlength=len(self.regular_ids))
            found = self._by_ranges[ranges] = self.intern(self.regular_ids[valid & (outside == 0)])
        return found

    def literal(self, text: Union[str, bytes]) -> tuple:
        """The token ids of `text`'s greedy longest-match tokenization over the regular tokens."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out, i = [], 0
        while i < len(data):
            for k in range(min(self._longest, len(data) - i), 0, -1):
                t = self._by_token.get(data[i:i + k])
                if t is not None:
                    out.append(t)
                    i += k
                    break
            else:
                raise OperatorProgramError(f"no regular token spells {data[i:i + 8]!r} (at byte {i} of {data!r})")
        return tuple(out)

    def complement(self, set_id: int) -> int:
        """V minus the set."""
        return self._derived(("not", self.check(set_id)), lambda: self._regular_words & ~self.words(set_id))

    def union(self, *set_ids: int) -> int:
        ids = tuple(sorted(set(self.check(s) for s in set_ids)))
        if len(ids) == 1:
            return ids[0]

        def words():
            out = np.zeros(self.n_words, dtype=np.uint32)
            for s in ids:
                out |= self._words[s]
            return out
        return self._derived(("or",) + ids, words)

    def difference(self, a: int, b: int) -> int:
        return self._derived(("minus", self.check(a), self.check(b)), lambda: self.words(a) & ~self.words(b))

    def first_common(self, a: int, b: int):
        """A token in both sets, or None."""
        both = np.flatnonzero(self.words(a) & self.words(b))
        if not len(both):
            return None
        w = int(both[0])
        word = int((self._words[a][w] & self._words[b][w]))
        return 32 * w + (word & -word).bit_length() - 1

    def _derived(self, key: tuple, words) -> int:
        """The set `key` names (an operation on interned sets), computed once from `words()`."""
        found = self._by_operation.get(key)
        if found is None:
            bits = np.unpackbits(words().view(np.uint8), bitorder="little")[:self.vocab_size]
            found = self._by_operation[key] = self.intern(np.flatnonzero(bits))
        return found

    def token_text(self, token_id: int) -> str:
        return self._bytes[token_id].decode("utf-8", "replace")


def _code_points(tokens: list, regular_ids: np.ndarray) -> tuple:
    """The code points of every regular token in one array, the index (into `regular_ids`) of
    the token each belongs to, and which tokens are valid UTF-8."""
    points, owner = [], []
    valid = np.ones(len(regular_ids), dtype=np.bool_)
    for k, t in enumerate(regular_ids):
        try:
            text = tokens[t].decode("utf-8")
        except UnicodeDecodeError:
            valid[k] = False
            continue
        points.extend(map(ord, text))
        owner.extend([k] * len(text))
    return np.array(points, dtype=np.int64), np.array(owner, dtype=np.int64), valid
