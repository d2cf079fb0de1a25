"""JSON Schema `format` values as regexes (whole-string matches), for `converter.py`.

Each regex follows the RFC the JSON Schema specification names, restricted where a regex cannot
say more (the restrictions are listed in specs/05-front-ends.md):

    date, time, date-time   RFC 3339 (`full-date`, `full-time`), days per month and February 29
                            only in leap years; years 0001-9999; no leap second (exact: below)
    duration                RFC 3339 Appendix A (ISO 8601 durations: P1Y2M, PT5M, P3W)
    email                   RFC 5321 `Mailbox`: a dot-atom or quoted local part; a host name or an
                            IPv4 address literal ([127.0.0.1]); not an IPv6 literal (its
                            automaton would make every email schema's grammar ten times larger)
    hostname                RFC 1123 labels of at most 63 characters, any number of them
    ipv4, ipv6              RFC 2673 dotted quad without leading zeros; RFC 4291 text forms
    uuid                    RFC 4122 hex groups 8-4-4-4-12
    uri, uri-reference      RFC 3986 `URI` and `URI-reference`: scheme, authority (userinfo, an
                            IPv4 or registered-name host, port), paths, query and fragment; not
                            an IP-literal host (`//[::1]`: as for email)
    iri, iri-reference      RFC 3987: the same with its `ucschar` code points, `iprivate` in
                            queries, and IP-literal hosts (IPv6, IPvFuture)
    uri-template            RFC 6570: literals and `{op var,var:3,var*}` expressions
    idn-email               RFC 6531: `email` whose atoms and domain labels also take any
                            non-ASCII character
    idn-hostname            RFC 5890-5893 (idn_hostname.py): labels of PVALID and contextual
                            code points between any of the four full stops, the hyphen and
                            combining-mark rules, 63 characters per ASCII label; the contextual
                            rules and the Bidi rule under exact_formats
    regex                   ECMA-262's Pattern grammar (regex_format.py): a grammar, not a regex
    json-pointer            RFC 6901: `/`-separated tokens, `~` only as `~0` or `~1`
    relative-json-pointer   a non-negative integer, then `#` or a JSON pointer

Formats not listed are annotations (the standard's default): any string.

Exact formats. Three parts of the RFC grammars cost seconds to build and are left out by default;
`exact_formats` (xg2ref/config.py) puts them in, `EXACT_FORMATS` below:

    time, date-time         a leap second: 23:59:60 in UTC, so `hh:mm:60` exactly when the offset
                            makes `hh:mm` 23:59 UTC (RFC 3339 section 5.7; 1,440 local times, an
                            automaton of thousands of states: 3 s to build)
    email                   an IPv6 address literal after the `@` (RFC 5321 `[IPv6:...]`)
    uri, uri-reference      an IP-literal host (RFC 3986 `[` IPv6address / IPvFuture `]`)
    hostname                253 characters at most in all (RFC 1034's 255 octets on the wire;
                            labels times lengths: 16,000 states, 9 s to build)
    idn-hostname            the contextual rules of RFC 5892 Appendix A and the Bidi rule of
                            RFC 5893 (1,401 states: about a minute to compile)

Under exact_formats a format is exact or refused: its "wider" part in `LIMITS` is recorded as an
approximation (strings.string_content). What no setting makes exact is in `LIMITS`: the Punycode of an `xn--` label is not decoded (a
label's validity as an IDNA A-label needs the decoded text: a finite but astronomically large
language), so `hostname` and the host names of `email` take any such label of letters, digits and
hyphens; `regex` (regex_format.py) is checked as far as a grammar goes, alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...config import get_json_schema_exact_formats

JSON_POINTER = r"(/([^~/]|~[01])*)*"
_DAY31 = r"(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
_DAY30 = r"(0[469]|11)-(0[1-9]|[12][0-9]|30)"
_FEB = r"02-(0[1-9]|1[0-9]|2[0-8])"
_LEAP = r"([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)-02-29"
_YEAR = r"([0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"  # 0001-9999 (Python's dates)
DATE = rf"({_YEAR}-({_DAY31}|{_DAY30}|{_FEB})|{_LEAP})"
TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
_DUR_TIME = r"T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S)"
_DUR_DATE = r"([0-9]+Y([0-9]+M([0-9]+D)?)?|[0-9]+M([0-9]+D)?|[0-9]+D)"
DURATION = rf"P({_DUR_DATE}({_DUR_TIME})?|{_DUR_TIME}|[0-9]+W)"
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
HOSTNAME = rf"{_LABEL}(\.{_LABEL})*"
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+"
_QUOTED = r'"([ !#-\[\]-~]|\\[ -~])*"'  # RFC 5321 Quoted-string: printable ASCII, `"` and `\` escaped
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(\.{_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"({_H16}:{_H16}|{IPV4})"
IPV6 = "(" + "|".join([
    rf"({_H16}:){{6}}{_LS32}",
    rf"::({_H16}:){{5}}{_LS32}",
    rf"({_H16})?::({_H16}:){{4}}{_LS32}",
    rf"(({_H16}:){{0,1}}{_H16})?::({_H16}:){{3}}{_LS32}",
    rf"(({_H16}:){{0,2}}{_H16})?::({_H16}:){{2}}{_LS32}",
    rf"(({_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    rf"(({_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(({_H16}:){{0,5}}{_H16})?::{_H16}",
    rf"(({_H16}:){{0,6}}{_H16})?::",
]) + ")"
EMAIL = rf"({_ATOM}(\.{_ATOM})*|{_QUOTED})@({HOSTNAME}|\[{IPV4}\])"
UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*"
# RFC 3987's ucschar (the code points an IRI takes beyond URI characters) and iprivate (in queries)
_UCSCHAR = (r"\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef\u{10000}-\u{1fffd}\u{20000}-\u{2fffd}\u{30000}-\u{3fffd}"
            r"\u{40000}-\u{4fffd}\u{50000}-\u{5fffd}\u{60000}-\u{6fffd}\u{70000}-\u{7fffd}\u{80000}-\u{8fffd}"
            r"\u{90000}-\u{9fffd}\u{a0000}-\u{afffd}\u{b0000}-\u{bfffd}\u{c0000}-\u{cfffd}\u{d0000}-\u{dfffd}"
            r"\u{e1000}-\u{efffd}")
_IPRIVATE = r"\ue000-\uf8ff\u{f0000}-\u{ffffd}\u{100000}-\u{10fffd}"


def _references(extra: str = "", private: str = "", ip_literal: bool = False) -> tuple:
    """(absolute, reference): RFC 3986 `URI` and `URI-reference`, or with `extra` code points
    among the unreserved ones (and `private` in queries) RFC 3987's `IRI` and `IRI-reference`:

        URI          = scheme ":" hier-part [ "?" query ] [ "#" fragment ]
        hier-part    = "//" authority path-abempty / path-absolute / path-rootless / path-empty
        authority    = [ userinfo "@" ] host [ ":" port ]      host = IPv4address / reg-name
        relative-ref = relative-part [ "?" query ] [ "#" fragment ]
        relative-part = "//" authority path-abempty / path-absolute / path-noscheme / path-empty
    With `ip_literal` a host may also be `[` IPv6address / IPvFuture `]` (the IRI formats; the
    URI formats leave it out: see the module docstring)."""
    unreserved = rf"A-Za-z0-9\-._~{extra}"
    pct = r"%[0-9A-Fa-f]{2}"
    sub = r"!$&'()*+,;="
    pchar = rf"([{unreserved}{sub}:@]|{pct})"
    nc = rf"([{unreserved}{sub}@]|{pct})"  # segment-nz-nc: no ':'
    segment = rf"{pchar}*"
    userinfo = rf"([{unreserved}{sub}:]|{pct})*"
    literal = rf"|\[({IPV6}|[vV][0-9A-Fa-f]+\.[{unreserved}{sub}:]+)\]" if ip_literal else ""
    host = rf"({IPV4}|([{unreserved}{sub}]|{pct})*{literal})"
    authority = rf"({userinfo}@)?{host}(:[0-9]*)?"
    abempty = rf"(/{segment})*"
    absolute = rf"/({pchar}+(/{segment})*)?"
    rootless = rf"{pchar}+(/{segment})*"
    noscheme = rf"{nc}+(/{segment})*"
    query = rf"(\?([{unreserved}{sub}:@/?{private}]|{pct})*)?"
    fragment = rf"(#([{unreserved}{sub}:@/?]|{pct})*)?"
    absolute_uri = rf"{_SCHEME}:(//{authority}{abempty}|{absolute}|{rootless}|){query}{fragment}"
    relative = rf"(//{authority}{abempty}|{absolute}|{noscheme}|){query}{fragment}"
    return absolute_uri, rf"({absolute_uri}|{relative})"


URI, URI_REFERENCE = _references()
IRI, IRI_REFERENCE = _references(_UCSCHAR, _IPRIVATE, ip_literal=True)
# RFC 6570 URI Template: literals and expressions `{` operator? varspec (`,` varspec)* `}`
_VARCHAR = r"([A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(\.?{_VARCHAR})*(:[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = rf"\{{[+#./;?&=,!@|]?{_VARSPEC}(,{_VARSPEC})*\}}"
_LITERAL = rf"([!#$&'()*+,\-./0-9:;=?@A-Z\[\]_a-z~{_UCSCHAR}{_IPRIVATE}]|%[0-9A-Fa-f]{{2}})"  # (and `'`: errata 6937)
URI_TEMPLATE = rf"({_LITERAL}|{_EXPRESSION})*"
# RFC 6531: the local part's atoms and the domain's labels also take any non-ASCII character
_UATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-\u0080-\ud7ff\ue000-\u{10ffff}]+"
_ULABEL = r"[A-Za-z0-9\u0080-\ud7ff\ue000-\u{10ffff}]([A-Za-z0-9\-\u0080-\ud7ff\ue000-\u{10ffff}]*" \
          r"[A-Za-z0-9\u0080-\ud7ff\ue000-\u{10ffff}])?"
_UQUOTED = r'"([ !#-\[\]-~\u0080-\ud7ff\ue000-\u{10ffff}]|\\[ -~])*"'
IDN_EMAIL = rf"({_UATOM}(\.{_UATOM})*|{_UQUOTED})@({_ULABEL}(\.{_ULABEL})*|\[{IPV4}\])"

# RFC 3339 section 5.7: a leap second is 23:59:60 in UTC. A local time hh:mm:60 with offset +o is
# UTC hh:mm - o, so the offset is (hh:mm + 1 minute) mod 24 h; with -o it is 23:59 - hh:mm
def _leap_seconds() -> str:
    alternatives = []
    for minute in range(24 * 60):
        plus, minus = (minute + 1) % 1440, 1439 - minute
        zulu = "|[Zz]" if minute == 1439 else ""
        alternatives.append(rf"{minute // 60:02d}:{minute % 60:02d}:60(\.[0-9]+)?"
                            rf"(\+{plus // 60:02d}:{plus % 60:02d}|-{minus // 60:02d}:{minus % 60:02d}{zulu})")
    return "(" + "|".join(alternatives) + ")"


LEAP_SECOND = _leap_seconds()
EXACT_TIME = rf"({TIME}|{LEAP_SECOND})"
EXACT_URI, EXACT_URI_REFERENCE = _references(ip_literal=True)

FORMAT_REGEXES = {
    "date": DATE,
    "time": TIME,
    "date-time": rf"{DATE}[Tt]{TIME}",
    "duration": DURATION,
    "email": EMAIL,
    "hostname": HOSTNAME,
    "ipv4": IPV4,
    "ipv6": IPV6,
    "uuid": UUID,
    "uri": URI,
    "uri-reference": URI_REFERENCE,
    "iri": IRI,
    "iri-reference": IRI_REFERENCE,
    "uri-template": URI_TEMPLATE,
    "idn-email": IDN_EMAIL,
    "json-pointer": JSON_POINTER,
    "relative-json-pointer": rf"(0|[1-9][0-9]*)(#|{JSON_POINTER})",
}

# the formats `exact_formats` changes: a format's regexes, every one matched (a length as a regex)
EXACT_FORMATS = {
    "time": (EXACT_TIME,),
    "date-time": (rf"{DATE}[Tt]{EXACT_TIME}",),
    "email": (rf"({_ATOM}(\.{_ATOM})*|{_QUOTED})@({HOSTNAME}|\[{IPV4}\]|\[IPv6:{IPV6}\])",),
    "uri": (EXACT_URI,),
    "uri-reference": (EXACT_URI_REFERENCE,),
    "hostname": (HOSTNAME, ".{1,253}"),
}
# a product of a format's automata (and of a length bound beside it) may grow this large under
# exact_formats (the 253-character host name is 16,000 states)
EXACT_FORMAT_STATES = 40_000

# what a format's grammar still leaves out (narrower) or lets in (wider), by format and by whether
# exact_formats is on; `xg2ref schema-report` shows them on the format's row
LIMITS = {
    ("time", False): "narrower: no leap second (exact_formats puts them in)",
    ("date-time", False): "narrower: no leap second (exact_formats puts them in)",
    ("email", False): "narrower: no IPv6 address literal (exact_formats puts it in); wider: the Punycode "
                      "of an xn-- label in the domain is not decoded",
    ("email", True): "wider: the Punycode of an xn-- label in the domain is not decoded",
    ("uri", False): "narrower: no IP-literal host (exact_formats puts it in)",
    ("uri-reference", False): "narrower: no IP-literal host (exact_formats puts it in)",
    ("hostname", False): "wider: more than 253 characters in all (exact_formats counts them); the Punycode "
                         "of an xn-- label is not decoded",
    ("hostname", True): "wider: the Punycode of an xn-- label is not decoded",
    ("idn-email", False): "wider: the domain's labels are not checked against IDNA2008",
    ("idn-email", True): "wider: the domain's labels are not checked against IDNA2008",
    ("regex", False): "wider: what a grammar cannot check (backreferences to groups that exist, one group per "
                      "name, ranges and quantifier bounds in order); an annotation beside a pattern or length bounds",
    ("regex", True): "wider: what a grammar cannot check (backreferences to groups that exist, one group per "
                     "name, ranges and quantifier bounds in order); an annotation beside a pattern or length bounds",
    ("idn-hostname", False): "wider: the contextual rules and the Bidi rule (exact_formats checks them), the "
                             "Punycode of an xn-- label, the length of a U-label's A-label, NFC and the whole "
                             "name's length are not checked",
    ("idn-hostname", True): "wider: the Punycode of an xn-- label, the length of a U-label's A-label, NFC and the "
                            "whole name's length are not checked",
}


@dataclass(frozen=True)
class FormatAutomaton:
    """A format whose language is built as an automaton over code points rather than written
    as a regex (`idn-hostname`): hashable, the automaton built once per process."""
    name: str
    exact: bool

    def automaton(self) -> tuple:
        from .idn_hostname import idn_hostname_automaton

        return idn_hostname_automaton(self.exact)


AUTOMATON_FORMATS = ("idn-hostname",)


@dataclass(frozen=True)
class FormatGrammar:
    """A format whose language is context-free (`regex`: balanced groups): a grammar of its
    own (regex_format.py), taken alone; beside a pattern or length bounds it is an annotation
    (no automaton to intersect: LIMITS)."""
    name: str

    def expr(self, rule):
        from .regex_format import regex_format_expr

        return regex_format_expr(rule)


GRAMMAR_FORMATS = ("regex",)


def format_regexes(name, exact: Optional[bool] = None) -> tuple:
    """The whole-string regexes a string in format `name` matches, every one (empty for formats
    that are annotations; a FormatAutomaton for those built as automata); `exact` is the
    exact_formats setting (module docstring; None: the process-wide one, xg2ref/config.py)."""
    if not isinstance(name, str):
        return ()
    exact = get_json_schema_exact_formats(exact)
    if name in AUTOMATON_FORMATS:
        return (FormatAutomaton(name, exact),)
    if name in GRAMMAR_FORMATS:
        return (FormatGrammar(name),)
    if exact and name in EXACT_FORMATS:
        return EXACT_FORMATS[name]
    return (FORMAT_REGEXES[name],) if name in FORMAT_REGEXES else ()
