"""Anchors and lookaheads of regexes, rewritten into what a grammar can say (the regex front
end of XGrammar-2 §3.1, whose per-rule automata take no assertions).

The parser (`parser.py`) keeps `^` and `$` as the markers `START` and `END`. This module
brings them to where a whole-string or searched match reads them:

- `$` anywhere: after it nothing more may be read, so the rest of the pattern must match the
  empty string there (`ends_last`);
- `^` or `$` inside a group that opens or closes an alternative: the group is spread over the
  alternative (`lift_anchored_groups`);
- lookaheads at the very start of a pattern, `^(?!A)rest`: split off (`leading_lookaheads`),
  to be met by intersection and complement of automata (grammar/regular.py).
"""

from __future__ import annotations

from typing import Optional

START, END = object(), object()  # the anchors `^` and `$` in a parse tree


# `$` before the end of a pattern, e.g. `(a($|/))+$`: after `$` nothing more may be read, so the
# rest of the pattern must match the empty string there. Every node splits into
#     mid  the strings it matches without passing a `$`
#     end  the strings it matches by passing one (nothing may follow in the whole match)
# with, for a sequence A B:   mid = A.mid B.mid     end = A.end E(B) | A.mid B.end
# and for A{m,n}:             mid = A.mid{m,n}      end = A.mid{m-1,n-1} A.end | A.mid{0,m-2} A.end E(A)
# where E(X) is how X matches the empty string (after a `$` nothing more is read): freely, only
# through a `^` (kept, for `starts_first` to judge), or not at all (that alternative is dropped).
# The pattern is then mid | end `$`, with `$` only at the end of an alternative.


def _empty_match(node):
    """How `node` matches the empty string: [] freely, [START] only where a `^` holds, None not."""
    if node is END:
        return []
    if node is START:
        return [START]
    if node[0] == "group":
        found = [_empty_sequence(alt) for alt in node[1]]
        return [] if [] in found else [START] if [START] in found else None
    if node[0] == "repeat":
        return [] if node[2] == 0 else _empty_match(node[1])
    return None


def _empty_sequence(items: list):
    parts = [_empty_match(x) for x in items]
    return None if None in parts else [START] if [START] in parts else []


def _split_at_end(node) -> tuple:
    """(mid, end) of `node` as parse nodes, None for the empty language."""
    empty = ("group", [[]])
    if node is END:
        return None, empty
    if isinstance(node, tuple) and node[0] == "group":
        mids, ends = [], []
        for items in node[1]:
            mid, end_alts = _split_sequence(items)
            if mid is not None:
                mids.append(mid)
            ends.extend(end_alts)
        return ("group", mids) if mids else None, ("group", ends) if ends else None
    if isinstance(node, tuple) and node[0] == "repeat":
        _, atom, lo, hi = node
        mid, end = _split_at_end(atom)
        whole = ("repeat", mid, lo, hi) if mid is not None else (empty if lo == 0 else None)
        if end is None or hi == 0:
            return whole, None
        before_hi = None if hi is None else hi - 1

        def before(count_lo: int, count_hi) -> Optional[list]:  # `mid` iterations ahead of the `$` one
            if mid is None:
                return [] if count_lo == 0 else None
            return [("repeat", mid, count_lo, count_hi)]
        alts = []
        last_owed = before(max(lo - 1, 0), before_hi)  # the `$` in the last owed iteration or a later one
        if last_owed is not None:
            alts.append(last_owed + [end])
        owed_empty = _empty_match(atom)  # or earlier: the iterations still owed then match nothing
        if owed_empty is not None and lo >= 2:
            alts.append(before(0, lo - 2) + [end] + owed_empty)
        return whole, ("group", alts) if alts else None
    return node, None


def _split_sequence(items: list) -> tuple:
    """(mid items or None, [end alternatives]) of a sequence."""
    mid, ends = [], []
    for item in items:
        item_mid, item_end = _split_at_end(item)
        # after a `$`, only what can match nothing; a `^` it needs for that is kept (`$^`), for
        # `starts_first` to see whether anything came before
        empty = _empty_match(item)
        ends = [] if empty is None else [alt + empty for alt in ends]
        if mid is not None and item_end is not None:
            ends.append(mid + [item_end])
        mid = mid + [item_mid] if mid is not None and item_mid is not None else None
    return mid, ends


def _has_inner_end(items: list) -> bool:
    """Whether a `$` stands anywhere but last in `items` (inside a group or repetition counts)."""
    def holds(node) -> bool:
        if node is END:
            return True
        if isinstance(node, tuple) and node[0] == "group":
            return any(holds(x) for alt in node[1] for x in alt)
        return isinstance(node, tuple) and node[0] == "repeat" and holds(node[1])
    return any(holds(x) for x in items[:-1]) or (bool(items) and items[-1] is not END and holds(items[-1]))


def ends_last(alts: list) -> list:
    """The same alternatives, each with `$` at most once and only as its last item."""
    out = []
    for items in alts:
        if not _has_inner_end(items):
            out.append(items)
            continue
        mid, ends = _split_sequence(items)
        if mid is not None:
            out.append(mid)
        out.extend(alt + [END] for alt in ends)
    return out


def _reversed(node):
    """The parse tree of the reversed language, `^` and `$` swapped."""
    if node is START or node is END:
        return END if node is START else START
    if isinstance(node, tuple) and node[0] == "group":
        return ("group", [[_reversed(x) for x in reversed(alt)] for alt in node[1]])
    if isinstance(node, tuple) and node[0] == "repeat":
        return ("repeat", _reversed(node[1]), node[2], node[3])
    return node


def starts_first(alts: list) -> list:
    """The same alternatives, each with `^` at most once and only as its first item: `ends_last`
    on the reversed pattern (before a `^` nothing may have been read, as after a `$` nothing
    may be read), reversed back: `(^a|b)*c` reads as `^ab*c|b*c`."""
    def reverse(items: list) -> list:
        return [_reversed(x) for x in reversed(items)]
    return [reverse(items) for items in ends_last([reverse(items) for items in alts])]


def lift_anchored_groups(alts: list, limit: int = 256) -> list:
    """The same alternatives with every group that holds an anchor and stands first or last in
    an alternative spread over it: `x(^a|b)` is `x^a|xb`, and `^$|(^a$)` is `^$|^a$`. This
    brings such anchors to the ends of top-level alternatives, where a search reads them;
    it stops at `limit` alternatives (the caller then reports the anchor)."""
    out, changed = list(alts), True
    while changed and len(out) <= limit:
        changed, spread = False, []
        for items in out:
            head = items[0] if items else None
            tail = items[-1] if items else None
            if isinstance(head, tuple) and head[0] == "group" and has_anchor_in_group([head]):
                spread.extend(list(alt) + items[1:] for alt in head[1])
                changed = True
            elif isinstance(tail, tuple) and tail[0] == "group" and has_anchor_in_group([tail]):
                spread.extend(items[:-1] + list(alt) for alt in tail[1])
                changed = True
            else:
                spread.append(items)
        out = spread
    return out


def has_anchor_in_group(items: list) -> bool:
    for item in items:
        if isinstance(item, tuple) and item[0] == "group":
            if any(x is START or x is END or has_anchor_in_group([x]) for alt in item[1] for x in alt):
                return True
        elif isinstance(item, tuple) and item[0] == "repeat" and has_anchor_in_group([item[1]]):
            return True
    return False


def _structure(pattern: str, start: int = 0):
    """(index, character, depth) of each character of `pattern` from `start` that is neither
    escaped nor inside a class: the groups' parentheses and the bars; depth counts the groups
    open around it (a group's own parentheses stand outside it)."""
    depth, in_class, j = 0, False, start
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = pattern[j + 1:j + 2] != "]"  # `[]`: the empty class, closed at once
            j += 0 if in_class else 1
        else:
            depth -= c == ")"
            yield j, c, depth
            depth += c == "("
        j += 1


def _group_end(pattern: str, i: int) -> Optional[int]:
    """The index just past the `)` that closes the group opening at `pattern[i]`, or None."""
    return next((j + 1 for j, c, depth in _structure(pattern, i) if c == ")" and depth == 0), None)


def _has_top_level_bar(pattern: str) -> bool:
    return any(c == "|" and depth == 0 for _, c, depth in _structure(pattern))


def leading_lookaheads(pattern: str) -> Optional[tuple[list[tuple[bool, str]], str]]:
    """For a pattern that opens with lookaheads at its start, `^(?!A)(?=B)rest`:
    ([(True, "A"), (False, "B")], "^rest") — (negated, the lookahead's own pattern) and the
    pattern without them; None for any other pattern. A search for such a pattern matches the
    strings the search for `^rest` matches, that have (or, negated, have not) a prefix `A`
    matches: a regular language, met by intersection and complement (grammar/regular.py)."""
    found, rest = [], pattern
    while rest.startswith(("^(?!", "^(?=")):
        end = _group_end(rest, 1)
        if end is None:
            return None
        found.append((rest[3] == "!", rest[4:end - 1]))
        rest = "^" + rest[end:]
    if not found or _has_top_level_bar(rest):
        return None
    return found, rest
