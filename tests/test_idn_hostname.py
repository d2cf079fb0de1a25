"""`format: idn-hostname` (xg2ref/frontends/json_schema/idn_hostname.py, specs/05 "idn-hostname"):
the automaton against a reference written label by label with the `idna` package's own checks
(its code point tables, contextual rules and Bidi rule), against the JSON-Schema-Test-Suite, and
compiled through the JSON Schema front end."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

idna_core = pytest.importorskip("idna.core")

import xg2ref as xgr
from xg2ref.frontends.json_schema.idn_hostname import FULL_STOPS, idn_hostname_automaton
from xg2ref.grammar.regular import matches
from xg2ref.tools.bench.schema_suite import load_suite

STOPS = "".join(map(chr, FULL_STOPS))


def _allowed(c: str) -> bool:
    data = idna_core.idnadata.codepoint_classes
    return any(idna_core.intranges_contain(ord(c), data[k]) for k in ("PVALID", "CONTEXTJ", "CONTEXTO"))


def reference(text: str, rules: bool) -> bool:
    """The idn-hostname language as specs/05 states it, label by label (idna's checks for the
    code points, the contextual rules and the Bidi rule, with check_ltr: every label of a name
    that has a right-to-left one)."""
    labels = re.split(f"[{re.escape(STOPS)}]", text)
    if not text or any(not label for label in labels):
        return False
    for label in labels:
        if label[0] == "-" or label[-1] == "-":
            return False
        if label.isascii():
            if len(label) > 63 or not re.fullmatch(r"[A-Za-z0-9-]+", label):
                return False
            if label[2:4] == "--" and label[:2].lower() != "xn":
                return False
            continue
        if label[2:4] == "--" or any(c.isascii() and not re.fullmatch(r"[a-z0-9-]", c) for c in label):
            return False
        if not all(_allowed(c) for c in label) or idna_core.unicodedata.category(label[0]).startswith("M"):
            return False
        if rules:
            for i, c in enumerate(label):
                data = idna_core.idnadata.codepoint_classes
                if idna_core.intranges_contain(ord(c), data["CONTEXTJ"]) and not idna_core.valid_contextj(label, i):
                    return False
                if idna_core.intranges_contain(ord(c), data["CONTEXTO"]) and not idna_core.valid_contexto(label, i):
                    return False
    if rules and any(idna_core.unicodedata.bidirectional(c) in ("R", "AL", "AN") for c in text):
        try:
            return all(idna_core.check_bidi(label, check_ltr=True) for label in labels)
        except idna_core.IDNABidiError:
            return False
    return True


# the code points the rules read: ASCII, full stops, marks, the contextual ones and their
# neighbours (l, Greek, Hebrew, Kana, Han, viramas, joining types), right-to-left letters and
# digits, and code points outside IDNA2008
ALPHABET = ("aAlxXnN0-" + STOPS + "\u00fc\u0301\u0903\u00b7\u0375\u03b1\u05f3\u05d0\u30fb\u3041\u4e08"
            "\u0660\u06f0\u0628\u064a\u0915\u094d\u200c\u200d\u0627\u302e\u0640\u00df_ ")


# pieces that meet or break one rule each, so that generated names are often valid
PIECES = ["l\u00b7l", "\u03b1\u0375\u03b1", "\u05d0\u05f3", "\u30fb\u3041", "\u0915\u094d\u200d",
          "\u0628\u064a\u200c\u0628", "\u0915\u094d\u200c", "\u05d0\u0660", "ab", "xn--", "\u00fc\u00df"]
NAMES = st.lists(st.sampled_from(PIECES + list(ALPHABET)), max_size=6).map("".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(alphabet=ALPHABET, max_size=9), NAMES), st.booleans())
def test_the_automaton_is_the_reference_language(text, rules):
    assert matches(idn_hostname_automaton(rules), text) == reference(text, rules), (text, rules)


def test_long_ascii_labels_and_xn_labels():
    for rules in (False, True):
        automaton = idn_hostname_automaton(rules)
        assert matches(automaton, "a" * 63) and not matches(automaton, "a" * 64)
        assert matches(automaton, "b." + "a" * 63 + ".c") and not matches(automaton, "b." + "a" * 64)
        assert matches(automaton, "xn--ihqwcrb4cv8a8dqg056pqjye") and not matches(automaton, "ab--cd")
        assert not matches(automaton, "xn--\u00fc")  # an A-label is ASCII


# what neither automaton checks (specs/05, formats.LIMITS); under the rules, also what the default leaves out
WIDER = ("Punycode", "A-label", "longer than 253", "only ASCII")
RULES = ("MIDDLE DOT", "KERAIA", "GERESH", "GERSHAYIM", "KATAKANA", "Arabic-Indic", "JOINER", "Bidi", "right-to-left",
         "must pass at every occurrence", "digit-first", "mixing both digit types", "left-to-right label")


@pytest.mark.parametrize("rules", [False, True])
def test_the_suite_s_instances(rules):
    automaton = idn_hostname_automaton(rules)
    cases = [c for c in load_suite() if c.group == "format:idn-hostname"]
    assert cases
    for case in cases:
        for description, data, valid in case.tests:
            if not isinstance(data, str):
                continue
            got = matches(automaton, data)
            if got != valid:  # only invalid instances the grammar documents as let in
                assert not valid and (any(w in description for w in WIDER) or data.lower().startswith("xn--")
                                      or (not rules and any(w in description for w in RULES))), (case.key, description)


def test_idn_hostname_compiles_in_a_schema():
    info = xgr.TokenizerInfo([bytes([b]) for b in range(256)])
    compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema(
        {"type": "object", "properties": {"h": {"type": "string", "format": "idn-hostname"}}, "required": ["h"]},
        any_whitespace=False)
    for name, ok in (("\uc2e4\ub840.\ud14c\uc2a4\ud2b8", True), ("a\u3002b", True), ("-a", False), ("a..b", False),
                     ("\u0301a", False), ("B\u00dc", False), ("\u302e", False)):
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        text = json.dumps({"h": name}, ensure_ascii=False)
        assert (matcher.accept_string(text) and matcher.is_terminated()) == ok, name


def test_idn_hostname_in_an_xml_parameter():
    """The XML parameter styles write strings raw: the automaton's rules there too."""
    from xg2ref.testing import _is_grammar_accept_string as accepts

    schema = {"type": "object", "properties": {"h": {"type": "string", "format": "idn-hostname"}}, "required": ["h"]}
    grammar = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": {
        "type": "json_schema", "json_schema": schema, "style": "qwen_xml"}})
    assert accepts(grammar, "<parameter=h>\uc2e4\ub840.\ud14c\uc2a4\ud2b8</parameter>")
    assert not accepts(grammar, "<parameter=h>-a</parameter>")
    assert not accepts(grammar, "<parameter=h>\u0301a</parameter>")


def test_its_complement_is_an_approximation():
    with pytest.raises(xgr.exceptions.JSONSchemaNotExactError, match="complement of format idn-hostname"):
        xgr.Grammar.from_json_schema({"type": "string", "not": {"format": "idn-hostname"}})
