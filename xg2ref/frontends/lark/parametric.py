"""llguidance's parametric rules (its docs/parametric.md), in the llguidance dialect of Lark.

A parametric rule `name::_ : alt1 %if c1 | alt2 | ...` takes one unsigned 64-bit parameter p.
Its references give the callee's parameter as an expression of p (`perm::set_bit(0)`,
`aa::incr([0:3])`, `bb::_`, or a constant `perm::0x0`), and an alternative is there only when its
condition holds for p (`%if bit_clear(0)`). The grammar is still context-free: one rule per
(rule, value) pair reached. Here it is expanded that way, exactly, at compile time:

    start: ... perm::v ...         (v a constant)          |-  instance perm(v) is reached
    instance r(p) reached, an alternative of r whose
      condition holds for p references s::e                 |-  instance s(e(p)) is reached
    instance r(p)                                           =   the rule of the alternatives of r
                                                                whose conditions hold for p

Each reached instance is a plain rule (`<name>__p<hex>`); an alternative whose condition fails
is left out (a rule left with none matches nothing). The expansion stops with a
`GrammarLimitError` naming the rule once more than `MAX_INSTANCES` instances are reached in one
grammar: a grammar that counts to 2**20 is refused, where llguidance would build its items
lazily during parsing.

Expressions (p the parameter; [x:y] the bits x to y-1, `_` all 64):

    _  v  set_bit(k) clear_bit(k) bit_and(v) bit_or(v)      p, v, p | 1<<k, p & ~(1<<k), p & v, p | v
    incr([x:y]) / decr([x:y])                               p[x:y] + 1 / - 1 in place, saturating

Conditions: `true`, `bit_clear(k)`, `bit_set(k)`, `is_ones(r)`, `is_zeros(r)`, `eq ne lt le gt
ge (r, v)` on p[r] (unsigned), `bit_count_eq ... _ge (r, k)` on the set bits of p[r], and
`and(c, c)`, `or(c, c)`, `not(c)`.

What llguidance checks is checked too: a parametric rule's body uses its parameter, a plain
rule's does not (its references give constants), a parametric rule is referenced with `::` and a
plain one without, and a parametric rule takes no stop, suffix, lazy, temperature or max_tokens.
"""

from __future__ import annotations

from typing import Callable

from ...exceptions import GrammarLimitError

MAX_INSTANCES = 4096  # (rule, parameter value) pairs one grammar may reach
NUM_BITS = 64
FULL = (1 << NUM_BITS) - 1
_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__, "gt": int.__gt__,
            "ge": int.__ge__}


# ---- reading (called by reader.py's parser in the llguidance dialect) ----------------------------

def parse_value(p) -> int:
    """A 64-bit literal: decimal or 0x-hexadecimal."""
    tok = p.expect("NUMBER", "expected a number")
    text = tok.text
    try:
        value = int(text, 16) if text[:2] in ("0x", "0X") else int(text) if text.isdigit() else -1
    except ValueError:
        value = -1
    if not 0 <= value <= FULL:
        p.fail(f"invalid parameter value '{text}' (an unsigned 64-bit number is needed)", tok)
    return value


def _bit(p, top: int) -> int:
    tok = p.peek()
    value = parse_value(p)
    if value > top:
        p.fail(f"number {value} is too large; must be <= {top}", tok)
    return value


def parse_range(p) -> tuple[int, int]:
    """`_` (bits 0..64) or `[x:y]`, x < y <= 64."""
    if p.peek().kind == "NAME" and p.peek().text == "_":
        p.i += 1
        return 0, NUM_BITS
    at = p.expect("[", "expected '_' or '[start_bit:stop_bit]'")
    lo = _bit(p, NUM_BITS - 1)
    p.expect(":", "expected ':' in a bit range")
    hi = _bit(p, NUM_BITS)
    p.expect("]", "expected ']' after a bit range")
    if hi <= lo:
        p.fail(f"end bit index {hi} must be > start bit index {lo}", at)
    return lo, hi


def _call(p, read: Callable) -> tuple:
    p.expect("(", "expected '('")
    out = read()
    p.expect(")", "expected ')'")
    return out


def parse_expr(p) -> tuple:
    """The parameter expression after `name::`."""
    tok = p.peek()
    if tok.kind == "NUMBER":
        return ("const", parse_value(p))
    name = p.expect("NAME", "expected a parameter expression").text
    if name == "_":
        return ("self",)
    if name in ("incr", "decr"):
        return (name, *_call(p, lambda: parse_range(p)))
    if name in ("bit_and", "bit_or"):
        return (name[4:], _call(p, lambda: parse_value(p)))
    if name in ("set_bit", "clear_bit"):
        k = _call(p, lambda: _bit(p, NUM_BITS - 1))
        return ("or", 1 << k) if name == "set_bit" else ("and", FULL ^ (1 << k))
    p.fail(f"unexpected parameter expression '{name}'", tok)


def parse_cond(p) -> tuple:
    """The condition after `%if`."""
    tok = p.expect("NAME", "expected a condition")
    name = tok.text
    if name == "true":
        if p.peek().kind == "(":
            p.i += 1
            p.expect(")", "expected ')'")
        return ("true",)
    if name in ("and", "or"):
        def two():
            left = parse_cond(p)
            p.expect(",", "expected ','")
            return left, parse_cond(p)
        return (name, *_call(p, two))
    if name == "not":
        return ("not", _call(p, lambda: parse_cond(p)))
    if name in ("bit_clear", "bit_set"):
        k = _call(p, lambda: _bit(p, NUM_BITS - 1))
        return ("eq", k, k + 1, int(name == "bit_set"))
    if name in ("is_ones", "is_zeros"):
        lo, hi = _call(p, lambda: parse_range(p))
        return ("eq", lo, hi, (1 << (hi - lo)) - 1 if name == "is_ones" else 0)
    op = name[len("bit_count_"):] if name.startswith("bit_count_") else name
    if op in _COMPARE:
        def pair():
            r = parse_range(p)
            p.expect(",", "expected ','")
            return r, (_bit(p, NUM_BITS - 1) if name != op else parse_value(p))
        (lo, hi), v = _call(p, pair)
        return (name if name == op else "count_" + op, lo, hi, v)
    p.fail(f"unexpected condition '{name}'", tok)


# ---- meaning --------------------------------------------------------------------------------------

def _field(m: int, lo: int, hi: int) -> int:
    return (m >> lo) & ((1 << (hi - lo)) - 1)


def evaluate(expr: tuple, m: int) -> int:
    """The callee's parameter when the caller's is m."""
    kind = expr[0]
    if kind == "const":
        return expr[1]
    if kind == "self":
        return m
    if kind == "or":
        return m | expr[1]
    if kind == "and":
        return m & expr[1]
    lo, hi = expr[1], expr[2]
    mask = ((1 << (hi - lo)) - 1) << lo
    if kind == "incr":
        return m if m & mask == mask else m + (1 << lo)
    return m if m & mask == 0 else m - (1 << lo)  # decr


def holds(cond: tuple, m: int) -> bool:
    """Whether condition `cond` holds for parameter m."""
    kind = cond[0]
    if kind == "true":
        return True
    if kind == "and":
        return holds(cond[1], m) and holds(cond[2], m)
    if kind == "or":
        return holds(cond[1], m) or holds(cond[2], m)
    if kind == "not":
        return not holds(cond[1], m)
    _, lo, hi, v = cond
    value = _field(m, lo, hi)
    if kind.startswith("count_"):
        return _COMPARE[kind[len("count_"):]](bin(value).count("1"), v)
    return _COMPARE[kind](value, v)


def uses_parameter(node) -> bool:
    """Whether a rule body (reader.py Node) reads its rule's parameter: a condition, or a
    reference whose parameter is not a constant."""
    return any(n.kind == "when" or (n.kind == "name" and n.value is not None and n.value[0] != "const")
               for n in node.walk())


class Instances:
    """The instances of parametric rules reached so far: (rule, value) -> rule name, and the
    ones whose bodies are still to be lowered."""

    def __init__(self, fresh: Callable[[str], str]):
        self.fresh = fresh
        self.names: dict[tuple[str, int], str] = {}
        self.pending: list[tuple[str, int, str]] = []

    def name(self, rule: str, value: int) -> str:
        key = (rule, value)
        name = self.names.get(key)
        if name is None:
            if len(self.names) >= MAX_INSTANCES:
                raise GrammarLimitError(
                    f"parametric rule '{rule}' reaches more than {MAX_INSTANCES} (rule, parameter) instances in "
                    f"this grammar (at parameter {value:#x}); xg2ref expands parametric rules when it compiles")
            name = self.names[key] = self.fresh(f"{rule}__p{value:x}")
            self.pending.append((rule, value, name))
        return name
