"""JSON Schema `format` values as regexes (whole-string matches), for `converter.py`.

Each regex follows the RFC the JSON Schema specification names, restricted where a regex cannot
say more (the restrictions are listed in specs/05-front-ends.md):

    date, time, date-time   RFC 3339 (`full-date`, `full-time`), days per month and February 29
                            only in leap years; years 0001-9999; no leap second
    duration                RFC 3339 Appendix A (ISO 8601 durations: P1Y2M, PT5M, P3W)
    email                   RFC 5321 `Mailbox`: a dot-atom or quoted local part; a host name or an
                            IPv4 address literal ([127.0.0.1]); not an IPv6 literal (its
                            automaton would make every email schema's grammar ten times larger)
    hostname                RFC 1123 labels of at most 63 characters
    ipv4, ipv6              RFC 2673 dotted quad without leading zeros; RFC 4291 text forms
    uuid                    RFC 4122 hex groups 8-4-4-4-12
    uri, uri-reference      RFC 3986: a scheme, then unreserved, sub-delims, ':', '@', '/', '?'
                            and percent-escapes; a reference may drop the scheme and have '#';
                            not an IP-literal host (`//[::1]`: as for email)
    json-pointer            RFC 6901: `/`-separated tokens, `~` only as `~0` or `~1`
    relative-json-pointer   a non-negative integer, then `#` or a JSON pointer

Formats not listed are annotations (the standard's default): any string.
"""

from __future__ import annotations

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
_PCHAR = r"([A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*"
URI = rf"{_SCHEME}:({_PCHAR}|[/?])*(#({_PCHAR}|[/?])*)?"
URI_REFERENCE = rf"({_SCHEME}:)?({_PCHAR}|[/?])*(#({_PCHAR}|[/?])*)?"

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
    "json-pointer": JSON_POINTER,
    "relative-json-pointer": rf"(0|[1-9][0-9]*)(#|{JSON_POINTER})",
}
