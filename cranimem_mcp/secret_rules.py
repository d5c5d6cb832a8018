"""The secrets guard's rule tables: what counts as a credential, and which part to replace.

A rule (``_Rule``) is a compiled regex, a finder and a cheap gate. The finder is a pure
function of the match and the original text that returns the span to replace and its label
(a webhook URL keeps its host, a connection string keeps everything but the password), or
``None`` to skip a look-alike. ``redaction`` runs the rules: it opens the gates, merges
overlapping finds under the most specific label (the lowest ``tier``) and repeats passes
until nothing new is found. This module only says what to look for; it does not import
``redaction``.

The rules have two sources. Provider formats that Yelp's ``detect-secrets`` knows come from
its plugins' own ``denylist`` regexes, instantiated once and run by ``redaction`` directly
(its ``scan_line`` mutates global settings, runs every plugin eagerly and took ~9 ms a line).
Its entropy, keyword and public-IP plugins are left out: they flag words, hex ids and
addresses (docs/secrets-measurement.md). Small named rules below add what it lacks: newer
provider keys, webhook and URL secrets, whole private key blocks, card and id numbers, and
credentials stated in prose ("my bank PIN is 4921").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

Hit = tuple[int, int, str]  # (start, end, label) of the part to replace
Finder = Callable[[re.Match[str], str], Hit | None]  # match, original text -> hit or skip


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    finder: Finder
    tier: int  # 0 key blocks, 1 provider formats, 2 structural, 3 keywords and prose
    # Runs only if one of these substrings occurs (case-insensitively unless it has
    # capitals; () is always open), the text has min_digits digits, and gate_re matches the
    # lowercased text: checked in that order, cheapest first.
    gate: tuple[str, ...] = ()
    min_digits: int = 0
    gate_re: re.Pattern[str] | None = None
    on_lower: bool = False  # match the lowercased text: ~10x faster than re.IGNORECASE
    fallback: re.Pattern[str] | None = None  # IGNORECASE twin, for when lower() moves offsets
    word_start: bool = False  # a \b before the match, checked after matching (cheaper)


# --- finders: which part of a match is the secret -------------------------------------------

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


def _token(label: str, group: int = 0) -> Finder:
    """The group, extended over token characters that follow: a fixed-length regex would
    otherwise leave the tail of a longer key in place."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if start < 0 else (start, _TOKEN_TAIL.match(text, end).end(), label)

    return find


def _exact(label: str, group: int | str = 0) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if start < 0 else (start, end, label)

    return find


def _trimmed(label: str) -> Finder:
    """Artifactory's regexes include the delimiters around the token."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        value = m.group()
        start = m.start() + len(value) - len(value.lstrip(" \t\r\n=\":'"))
        return start, m.start() + len(value.rstrip(' \t\r\n"')), label

    return find


def _after(prefix_group: int, label: str) -> Finder:
    """A webhook URL: keep the host and fixed path, replace the secret path."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        return m.end(prefix_group), _TOKEN_TAIL.match(text, m.end()).end(), label

    return find


def _jwt(is_valid: Callable[[str], bool]) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        # Take any token tail, but not a sentence's full stop after an unsigned token.
        start, end = m.start(), _TOKEN_TAIL.match(text, m.end()).end()
        if text[end - 1] == ".":
            end -= 1
        return (start, end, "JWT") if is_valid(text[start:end]) else None

    return find


# The end of a block, or the start of the next one (then this block has no end).
_KEY_END = re.compile(r"-{2,5} ?(?:END|BEGIN) [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?(?: ?-{2,5})?")
_PUTTY_END = re.compile(r"Private-MAC: *[0-9a-fA-F]+|PuTTY-User-Key-File")
_KEY_BODY = re.compile(
    r"(?:[ \t]*\r?\n?[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]{2,30}: [^\n]{0,200}))*"
)
_DASHES = re.compile(r" ?-*")


def _private_key(m: re.Match[str], text: str) -> Hit | None:
    """The whole block, BEGIN line to END line; when the END is missing (a truncated
    paste), through the base64 body that follows the BEGIN line."""
    start = m.start()
    if text[start - 2 : start] == "- ":  # "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
        start -= 1
    while start > 0 and m.start() - start < 6 and text[start - 1] == "-":
        start -= 1
    putty = m.group().startswith("PuTTY")
    tail = (_PUTTY_END if putty else _KEY_END).search(text, m.end(), m.end() + 16_000)
    if tail and "BEGIN" not in tail.group() and not tail.group().startswith("PuTTY"):
        return start, tail.end(), "private key"
    if putty:
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
    else:
        line_end = _DASHES.match(text, m.end()).end()
    return start, _KEY_BODY.match(text, line_end).end(), "private key"


def _url_password(group: int | str) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if _PLACEHOLDER_VALUE.fullmatch(text[start:end]) else (start, end, "password")

    return find


def _slack_webhook(m: re.Match[str], text: str) -> Hit | None:
    cut = m.group().lower().find("/services/") + len("/services/")
    return m.start() + cut, _TOKEN_TAIL.match(text, m.end()).end(), "Slack webhook URL"


def _npm_rc(m: re.Match[str], text: str) -> Hit | None:
    # The plugin's group runs to the end of the line: keep only the token.
    start = m.start(1)
    return start, _TOKEN_TAIL.match(text, start).end(), "npm token"


def _aws_secret(m: re.Match[str], text: str) -> Hit | None:
    v = m.group()  # mixed case and digits: not a git SHA, not a word
    if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
        return m.start(), m.end(), "AWS secret key"
    return None


def _authorization(m: re.Match[str], text: str) -> Hit | None:
    start, end = m.span("value")
    if end - start < 8 or _PLACEHOLDER_VALUE.fullmatch(text[start:end]):
        return None
    basic = (m.groupdict().get("scheme") or "").lower() == "basic"
    return start, end, "basic auth credentials" if basic else "bearer token"


# --- values stated after a keyword -----------------------------------------------------------

_PLACEHOLDER_VALUE = re.compile(
    r"<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|\{[A-Za-z_][A-Za-z0-9_.]*\}|%\(?\w*\)?s"
    r"|\*+|[xX•.?#_-]{3,}|…|(?:your|my)[_-].*|redacted|\[.*",
    re.IGNORECASE,
)
# Words that follow "password is" in ordinary sentences ("my password is on the sticky note").
_NOT_A_VALUE = frozenset(
    """a an the my your our his her their its this that these those it is was be been being
    not no none null nil true false yes ok okay on in at of for to from with by as into than
    same different correct incorrect wrong right invalid valid strong weak secure insecure safe
    unsafe long short simple complex easy hard obvious new old expired required optional
    mandatory needed necessary missing unknown empty blank hidden secret private temporary
    permanent changed reset saved stored written encrypted hashed set unset forgotten lost
    compromised leaked stolen shared protected sensitive case-sensitive still also just only
    now here there below above attached enclosed somewhere something anything nothing
    everything what which who where when how why because and or but if so then too very
    really quite pretty super default standard generic mine yours ours hers theirs known
    must should will would can could may might""".split()
)
_WORDISH_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "ful", "ous", "ive", "less", "ment")
_CLAUSE_END = re.compile(r"\s*(?:$|[.,;!?)\n]|\s(?:and|but|so|or|then)\b)")
_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’"}


def _secret_value(m: re.Match[str], text: str, mode: str) -> tuple[int, int] | None:
    """The span of the ``value`` group if it plausibly is a secret. ``mode``: "prose" (after
    "is": a plain word must end its clause), "assign" (after ":" or "=": any word but the
    stoplist) or "strict" (must look made up: a digit, a symbol or an inner capital)."""
    start, end = m.span("value")
    if text[start] in _QUOTES:
        if end - start < 3 or text[end - 1] != _QUOTES[text[start]]:
            return None
        inner = text[start + 1 : end - 1]
        return (
            None
            if not inner.strip() or _PLACEHOLDER_VALUE.fullmatch(inner)
            else (start + 1, end - 1)
        )
    while end > start and text[end - 1] in ".,;:)]}?":
        end -= 1
    value = text[start:end]
    if len(value) < 3 or _PLACEHOLDER_VALUE.fullmatch(value) or value.lower() in _NOT_A_VALUE:
        return None
    made_up = (
        any(c.isdigit() for c in value)
        or any(not c.isalnum() and c not in "-'’" for c in value)
        or any(c.isupper() for c in value[1:])
    )
    if made_up:
        return start, end
    if mode == "strict" or len(value) < 4 or value.lower().endswith(_WORDISH_SUFFIXES):
        return None
    if mode == "prose" and not _CLAUSE_END.match(text, end):
        return None
    return start, end


def _tokenish(value: str, quoted: bool = False) -> bool:
    """Keys and tokens are long and mix letters with digits: "token: yes" is not one. A quoted
    value given to a secret-named key (``SECRET_KEY = "notverysecret"``) only needs length."""
    return len(value) >= 8 and (
        quoted
        or len(value) >= 20
        or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))
    )


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SHORT_PASSWORD = re.compile(r"(?:^|_)(?:pass|pw)(?:$|_|[0-9])")


def _label_for_name(name: str) -> str | None:
    n = name.lower().replace("-", "_").replace(".", "_")
    if "passcode" in n:
        return "passcode"
    if any(w in n for w in ("password", "passwd", "passphrase", "pwd")) or _SHORT_PASSWORD.search(
        n
    ):
        return "password"
    if "private_key" in n or "privatekey" in n:
        return "private key"
    if any(w in n for w in ("api_key", "apikey", "access_key", "accesskey", "auth_key")):
        return "API key"
    if "secret" in n:
        return "secret"
    return "token" if "token" in n else None


def _assignment(m: re.Match[str], text: str) -> Hit | None:
    """``name: value`` / ``name=value`` in config, env, JSON, queries and command lines. The
    regex starts at the key word (fast to scan for); the name may begin up to 40 characters
    before it ("OPENAI_API_KEY", "db.password", "clientSecret")."""
    at = name_start = m.start("word")
    if text[at - 2 : at] != "--":
        while name_start > 0 and at - name_start < 40 and text[name_start - 1] in _NAME_CHARS:
            name_start -= 1
    label = _label_for_name(text[name_start : m.end("word")])
    word = m["word"].lower()
    # A short word inside a longer name must start a name part ("db_pass", not "bypass").
    if label is None or (at > name_start and word in ("pass", "pw", "pwd", "token", "secret")):
        before = text[at - 1] if at > name_start else "_"
        if label is None or (before.isalnum() and not (before.islower() and text[at].isupper())):
            return None
    mode = "assign" if m["op"] != ":" or text[m.end("op") : m.end("op") + 1] in "\"'" else "prose"
    span = _secret_value(m, text, "strict" if word in ("pass", "pw", "pwd") else mode)
    if span is None:
        return None
    start, end = span
    if text[m.start("value")] not in _QUOTES:
        value = text[start:end]
        stops = "&#" if name_start and text[name_start - 1] in "?&" else ""
        stops += ";" if label == "password" else ""
        cuts = [i for i in (value.find(c) for c in stops) if i >= 0]
        end = start + min(cuts) if cuts else end
    quoted = text[m.start("value")] in _QUOTES
    if end <= start or (
        label in ("token", "secret", "API key") and not _tokenish(text[start:end], quoted)
    ):
        return None
    if (
        label == "password"
        and ";" in text[max(0, name_start - 1) : name_start] + text[end : end + 1]
    ):
        label = "connection string password"
    return start, end, label


def _conn_mode(m: re.Match[str]) -> str:
    """How sure the connector makes us: "password = swordfish" is config; after "is" or ":"
    a plain word must end its clause ("Password: ask Alice" is prose); with no connector at
    all ("admin / password x7Gq!2") the value must look made up."""
    conn = m["conn"].strip()
    return "assign" if conn == "=" else "strict" if not conn else "prose"


def _owned_by_assignment(m: re.Match[str]) -> bool:
    """ "password: x", "token=x": the assignment rule matches those too, and knows where a
    value ends in a query string or a connection string."""
    return m["conn"].strip() in (":", "=") and m.start("conn") <= m.end("kw") + 1


def _prose_password(m: re.Match[str], text: str) -> Hit | None:
    kw = m["kw"].lower()
    if _owned_by_assignment(m) and kw.startswith("pass"):
        return None
    label = "passcode" if kw.startswith("passcode") else "password"
    span = _secret_value(m, text, _conn_mode(m))
    return None if span is None else (*span, label)


def _before(text: str, at: int, width: int) -> str:
    """The lowercased ``width`` characters before ``at``, for reading a qualifier back."""
    return text[max(0, at - width) : at].lower()


_TOKEN_QUALIFIER = re.compile(
    r"(?P<q>api|access|secret|licen[cs]e|product|private|encryption|master|client|app|signing"
    r"|webhook|auth(?:entication)?|refresh|bearer)\s+$"
)


def _prose_token(m: re.Match[str], text: str) -> Hit | None:
    """ "<qualifier> key|secret|token is <value>": anchored on the noun, qualifier read back."""
    noun = m["kw"].lower()
    if _owned_by_assignment(m) and noun in ("token", "secret"):
        return None
    q = _TOKEN_QUALIFIER.search(_before(text, m.start(), 16))
    qual = q["q"] if q else ""
    if noun == "key" and not qual:
        return None  # "the key is 42": a bare key is not a credential
    if noun == "key" and qual in ("api", "access"):
        label = "API key"
    elif qual.startswith(("licen", "product")):
        label = "license key"
    elif noun == "key" and qual == "private":
        label = "private key"
    else:
        label = "token" if noun == "token" else "secret"
    span = _secret_value(m, text, "strict" if _conn_mode(m) == "strict" else "assign")
    if span is None or not _tokenish(text[span[0] : span[1]]):
        return None
    return span[0], span[1], label


_ACCESS_QUALIFIER = re.compile(
    r"(?:garage(?: door)?|front door|back door|door|gate|alarm|lock(?:box)?|key ?(?:pad|box)"
    r"|locker|safe|entry|entrance|access|building|apartment|unlock|parking|voicemail)\s+$"
)
_CODE_QUALIFIER = re.compile(
    r"(?P<q>backup|recovery|2fa|two[- ]factor|mfa|otp|one[- ]time|verification|authenticator"
    r"|security|login|sms|totp)\s+$"
)


def _access_code(m: re.Match[str], text: str) -> Hit | None:
    if not _ACCESS_QUALIFIER.search(_before(text, m.start(), 20)):
        return None
    return m.start("value"), m.end("value"), "access code"


def _auth_codes(m: re.Match[str], text: str) -> Hit | None:
    q = _CODE_QUALIFIER.search(_before(text, m.start(), 20))
    if q is None:
        return None
    label = "recovery code" if q["q"] in ("backup", "recovery") else "2FA code"
    return m.start("value"), m.end("value"), label


# --- numbers: cards, national ids, bank accounts ----------------------------------------------


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        total += (d * 2 - 9 if d > 4 else d * 2) if i % 2 else d
    return total % 10 == 0


_CARD_PREFIX = re.compile(
    r"4|5[1-5]|2(?:2[2-9]|[3-6]|7[01]|720)|3[47]|30[0-5]|3[68]|35|6(?:011|5|4[4-9]|2)"
)


def _card(m: re.Match[str], text: str) -> Hit | None:
    if m.start() and text[m.start() - 1].isdigit():
        return None  # the tail of a longer number
    raw = m.group()
    digits = "".join(c for c in raw if c.isdigit())
    if len(set(raw) - set(digits)) > 1 or not 13 <= len(digits) <= 19:
        return None  # mixed separators
    if not _CARD_PREFIX.match(digits) or not _luhn_ok(digits):
        return None
    return m.start(), m.end(), "card number"


def _ssn(m: re.Match[str], text: str) -> Hit | None:
    start, end = m.span()
    before, after = text[start - 1 : start] if start else "", text[end : end + 2]
    if before and (before.isdigit() or before == "-"):
        return None
    if after[:1] == "-" or after[:1].isdigit() or (after[:1] == "." and after[1:2].isdigit()):
        return None
    area, group, serial = m.group().split("-")
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return None
    return start, end, "social security number"


_IBAN_COUNTRIES = frozenset(
    "AD AE AL AT AZ BA BE BG BH BR CH CR CY CZ DE DK DO EE EG ES FI FO FR GB GE GI GL GR GT HR "
    "HU IE IL IQ IS IT JO KW KZ LB LC LI LT LU LV MC MD ME MK MR MT MU NL NO PK PL PS PT QA RO "
    "RS SA SC SE SI SK SM ST SV TL TN TR UA VA VG XK".split()
)


def _iban(m: re.Match[str], text: str) -> Hit | None:
    start, end = m.span()
    if (start and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
        return None
    compact = m.group().replace(" ", "")
    if compact[:2] not in _IBAN_COUNTRIES or not 15 <= len(compact) <= 34:
        return None
    number = int("".join(str(int(c, 36)) for c in compact[4:] + compact[:4]))
    return (start, end, "IBAN") if number % 97 == 1 else None


# --- our rules -----------------------------------------------------------------------------------

# Written in lowercase where matched on the lowercased text (on_lower).
_MID = r"(?:\s+(?:for|to|of|on|at)\s+(?:[\w.@'’\-]+\s+){0,3}?[\w.@'’\-]+)?"
_CONN = (
    r"(?P<conn>\s*[:=]|\s+-\s|\s+(?:is\s+now|is\s+still|is|was|are|were|has\s+been\s+(?:changed|set|updated)"
    r"\s+to|(?:was\s+)?(?:changed|set|updated|reset)\s+to|will\s+be|remains|reads)(?:\s*:)?"
    r"|\s+(?=\S*[0-9!@#$%^&*+=~]))\s*"  # no connector: only before a digit or symbol
)
_VALUE = (
    r"(?P<value>\"[^\"\n]{1,128}\"|'[^'\n]{1,128}'|“[^”\n]{1,128}”|‘[^’\n]{1,128}’"
    r"|`[^`\n]{1,128}`|[^\s\"'“”‘’`]{1,128})"
)
_CODE = r"(?=[a-z-]*[0-9])[a-z0-9]{3,10}(?:-[a-z0-9]{3,10}){0,3}"
_DIGITS_END = r"(?![0-9]|[.,/:-][0-9])"


def _rule(tier: int, pattern: str, finder: Finder, gate: tuple[str, ...] = (), *,
          gate_re: re.Pattern[str] | None = None, lower: bool = False, word: bool = False,
          digits: int = 0) -> _Rule:  # fmt: skip
    """``lower``: the pattern is written in lowercase and matched on the lowercased text."""
    fallback = re.compile(pattern, re.IGNORECASE) if lower else None
    return _Rule(re.compile(pattern), finder, tier, gate, digits, gate_re, lower, fallback, word)


def _own_rules() -> list[_Rule]:
    code_is = r"(?:\s*(?:is|was|is\s+now|:|=|-|#))?\s*"
    codes = _CODE + r"(?:(?:\s*[,;]\s*|\s+(?:and\s+)?)" + _CODE + r"){0,15}"
    return [
        _rule(0, r"-{2,5} ?BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?", _private_key,
              ("PRIVATE KEY",)),
        # provider formats detect-secrets 1.5 lacks
        _rule(1, r"sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_\-]{20,}", _token("Anthropic API key"),
              ("sk-ant-",)),
        _rule(1, r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", _token("OpenAI API key"),
              ("sk-",)),
        _rule(1, r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]{48}(?![A-Za-z0-9])", _token("OpenAI API key"),
              ("sk-",)),
        _rule(1, r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_\-]{32,}", _token("API key"), ("sk-",)),
        _rule(1, r"AIza[0-9A-Za-z_\-]{35}", _token("Google API key"), ("AIza",)),
        _rule(1, r"GOCSPX-[A-Za-z0-9_\-]{28}", _token("Google OAuth client secret"), ("GOCSPX-",)),
        _rule(1, r"ya29\.[0-9A-Za-z_\-]{20,}", _token("Google OAuth token"), ("ya29.",)),
        _rule(1, r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}", _token("Hugging Face token"), ("hf_",)),
        _rule(1, r"github_pat_[A-Za-z0-9_]{22,}", _token("GitHub token"), ("github_pat_",)),
        _rule(1, r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}", _token("npm token"), ("npm_",)),
        _rule(1, r"[sr]k_(?:live|test)_[0-9a-zA-Z]{16,}", _token("Stripe key"),
              ("k_live_", "k_test_")),
        _rule(1, r"whsec_[A-Za-z0-9]{24,}", _token("Stripe webhook secret"), ("whsec_",)),
        _rule(1, r"xapp-[0-9]-[A-Za-z0-9-]{20,}", _token("Slack token"), ("xapp-",)),
        _rule(1, r"(?<![A-Za-z0-9_])gsk_[A-Za-z0-9]{40,}", _token("Groq API key"), ("gsk_",)),
        _rule(1, r"(?<![A-Za-z0-9_-])xai-[A-Za-z0-9]{60,}", _token("xAI API key"), ("xai-",)),
        _rule(1, r"pplx-[A-Za-z0-9]{40,}", _token("Perplexity API key"), ("pplx-",)),
        _rule(1, r"(?<![A-Za-z0-9_])r8_[A-Za-z0-9]{30,}", _token("Replicate API token"), ("r8_",)),
        # webhook URLs: keep the host, replace the secret path
        _rule(1, r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/]{20,}",
              _after(1, "Slack webhook URL"), ("hooks.slack.com",)),
        _rule(1, r"(https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/)[0-9]{5,}/"
                 r"[A-Za-z0-9_\-]{20,}", _after(1, "Discord webhook URL"), ("discord",)),
        _rule(1, r"(https://[A-Za-z0-9.\-]*(?:webhook|outlook)\.office\.com/webhook(?:b2)?/)"
                 r"[A-Za-z0-9@/\-]{30,}", _after(1, "Microsoft Teams webhook URL"),
              ("office.com/webhook",)),
        _rule(1, r"(https://hooks\.zapier\.com/hooks/catch/)[0-9]+/[A-Za-z0-9]+",
              _after(1, "Zapier webhook URL"), ("hooks.zapier.com",)),
        # structural: URLs, headers, numbers
        _rule(2, r"[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'<>]*:"
                 r"(?P<value>[^\s@/?#\"'<>]{1,256})@(?=[A-Za-z0-9\[._\-])",
              _url_password("value"), ("://",)),
        _rule(2, r"(?:sharedaccesskey|accountkey)\s*=\s*[a-z0-9+/]{30,}={0,2}",
              _after_eq("Azure shared access key"), ("accesskey", "accountkey"), lower=True),
        _rule(2, r"authorization[\"']?\s*[:=]\s*[\"']?(?:(?P<scheme>bearer|basic|token|bot|digest"
                 r"|apikey|key)\s+)?(?P<value>[a-z0-9_\-+/=.~:]{1,2048})",
              _authorization, ("authorization",), lower=True),
        _rule(2, r"bearer\s+(?P<value>(?=[a-z0-9_\-+/=.~]*[0-9])[a-z0-9_\-+/=.~]{16,2048})",
              _authorization, ("bearer",), lower=True, word=True),
        _rule(2, r"[?&;](?:sig|signature|key)=(?P<value>[A-Za-z0-9%_\-+/=.~]{16,})",
              _exact("token", "value"), ("sig=", "signature=", "key=")),
        _rule(2, r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _aws_secret,
              ("aws", "AKIA", "ASIA")),
        # these open with a class, not a lookbehind, so the scan skips non-digits fast; the
        # finders check the boundaries
        _rule(2, r"[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{1,7}(?![0-9])"
                 r"|3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5}(?![0-9])", _card,
              gate_re=_CARD_GATE, digits=13),
        _rule(2, r"[0-9]{3}-[0-9]{2}-[0-9]{4}", _ssn, ("-",), gate_re=_SSN_GATE, digits=9),
        # an IBAN is looked for only near words that introduce one
        _rule(2, r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?", _iban, _IBAN_WORDS,
              gate_re=_IBAN_GATE, digits=8),
        # keywords: assignments in config, env, JSON, query strings and command lines
        _rule(3, r"(?P<word>password|passwd|passphrase|passcode|pwd|pass|pw|(?:api|access|auth"
                 r"|private|secret|signing|encryption|master)[_.\-]?key|apikey|client[_.\-]?secret"
                 r"|secret|token)(?:[_.\-]?[0-9])?[\"']?\s*(?P<op>:=|=>|=|:)\s*" + _VALUE,
              _assignment, ("pass", "pw", "secret", "token", "key"), lower=True),
        _rule(3, r"--(?P<word>password|passwd|pass|token|secret|api-key|apikey)(?P<op>[= ])\s*"
                 + _VALUE, _assignment, ("--",), lower=True),
        # credentials stated in prose
        _rule(3, r"(?P<kw>pass(?:word|phrase|code)|passwd|wi-?fi\s+key|wpa2?\s+key|network\s+key)"
                 r"s?\b" + _MID + _CONN + _VALUE,
              _prose_password, ("pass", "key"), lower=True, word=True),
        _rule(3, r"(?P<kw>key|secret|token)s?\b" + _MID + _CONN + _VALUE,
              _prose_token, ("key", "secret", "token"), lower=True, word=True),
        _rule(3, r"(?:PIN|PUK)s?\b(?:\s*(?i:code|number|no\.?|#))?" + _MID
                 + r"(?:\s*(?i:is|was|is\s+now|:|=|-|#))?\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
              _exact("PIN", "value"), ("PIN", "PUK"), word=True),
        _rule(3, r"pin(?:\s*(?:code|number))?" + _MID
                 + r"\s*(?:is|was|is\s+now|:|=)\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
              _exact("PIN", "value"), ("pin",), lower=True, word=True),
        _rule(3, r"(?:code|combo|combination|pin)\b" + _MID + code_is
                 + r"(?P<value>[0-9][0-9#*\-]{2,11})(?![0-9])",
              _access_code, ("code", "combo", "combination", "pin"), lower=True, word=True),
        _rule(3, r"combination" + _MID
                 + r"\s*(?:is|was|:|=)\s*(?P<value>[0-9]{1,3}(?:[-\s][0-9]{1,3}){2,4})(?![0-9])",
              _exact("access code", "value"), ("combination",), lower=True, word=True),
        _rule(3, r"(?:codes?|keys?|pins?)\b" + _MID + r"(?:\s*(?:are|is|were|was|:|=|-))?\s*"
                 + r"(?P<value>" + codes + r")(?![a-z0-9])",
              _auth_codes, ("code", "key", "pin"), lower=True, word=True),
        _rule(3, r"(?:seed|recovery|mnemonic|secret)\s+(?:phrase|words)\s*(?:is|are|:|=)\s*"
                 r"(?P<value>(?:[a-z]{3,8}\s+){11,23}[a-z]{3,8})\b",
              _exact("recovery phrase", "value"), ("phrase", "words"), lower=True, word=True),
        _rule(3, r"(?:cvv2?|cvc2?)\b(?:\s*(?:code|number))?\s*(?:is|was|:|=|-)?\s*"
                 r"(?P<value>[0-9]{3,4})(?![0-9])",
              _exact("card security code", "value"), ("cvv", "cvc"), lower=True, word=True),
        _rule(3, r"(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b\D{0,20}?"
                 r"(?P<value>[0-9]{3}[ .]?[0-9]{2}[ .]?[0-9]{4})(?![0-9])",
              _exact("social security number", "value"), ("ssn", "social security"),
              lower=True, word=True),
        _rule(3, r"(?i:passport)\s*(?i:number|no\.?|#)?\s*(?i:is|was|:|=|-)?\s*"
                 r"(?P<value>(?=[A-Z]*[0-9])[A-Z0-9]{6,9})\b",
              _exact("passport number", "value"), ("passport",), word=True),
    ]  # fmt: skip


def _after_eq(label: str) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start = m.start() + m.group().index("=") + 1
        while text[start] == " ":
            start += 1
        return start, m.end(), label

    return find


_CARD_GATE = re.compile(r"[0-9]{4}[ -]?[0-9]{4}")
_SSN_GATE = re.compile(r"-[0-9]{2}-[0-9]")  # opens with a literal: found with a fast search
_IBAN_GATE = re.compile(r"[a-z]{2}[0-9]{2} ?[a-z0-9]{4} ?[a-z0-9]{4}")
_IBAN_WORDS = ("iban", "bank", "account", "acct", "sepa", "wire", "transfer", "konto", "swift",
               "bic", "pay", "rent", "salary", "invoice", "refund")  # fmt: skip


# --- detect-secrets' plugins -------------------------------------------------------------------

# Gates are sound: a pattern cannot match unless its gate opens. The slow keyword-assignment
# plugins (Cloudant, IBM, SoftLayer) all need a key word, an assignment and a 24+ char value.
_ASSIGN_GATE = re.compile(
    r"(?:key|pwd|pw|password|pass|token)[\"']?\]? *(?:=|:|:=|=>| +|::) *[\"']?[a-z0-9_\-]{24}"
)
_ASSIGN = (("key", "pw", "pass", "token"), _ASSIGN_GATE)
_JWT = re.compile(
    r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_=-]++\.[A-Za-z0-9_=-]++(?:\.[A-Za-z0-9_+/=-]*+)?"
)
_TELEGRAM_GATE = re.compile(r":[0-9a-z_-]{35}")  # opens with a literal: a fast search
_DISCORD_GATE = re.compile(r"\.[a-z0-9_-]{6}\.")


def _detect_secrets_rules() -> list[_Rule]:
    from detect_secrets.plugins import (  # noqa: I001 (one block, not 23 lines)
        artifactory, aws, azure_storage_key, basic_auth, cloudant, discord, github_token,
        gitlab_token, ibm_cloud_iam, ibm_cos_hmac, jwt, mailchimp, npm, openai, private_key,
        pypi_token, sendgrid, slack, softlayer, square_oauth, stripe, telegram_token, twilio,
    )  # fmt: skip

    # (finder, gate) where gate is the substrings or (substrings, confirming regex)
    gitlab = ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")
    github = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    aws_ids = ("A3T", "ABIA", "ACCA", "AKIA", "ASIA")
    # Per plugin, per pattern of its denylist, in order: (finder, gate).
    table: list[tuple[Any, list[tuple[Finder, Any]]]] = [
        (private_key.PrivateKeyDetector(), [(_private_key, ("PRIVATE KEY", "PuTTY-User-Key"))] * 8),
        (aws.AWSKeyDetector(), [(_token("AWS access key"), aws_ids),
                                (_exact("AWS secret key", 1), ("aws",))]),
        (azure_storage_key.AzureStorageKeyDetector(),
         [(_after_eq("Azure storage key"), ("AccountKey=",))]),
        (github_token.GitHubTokenDetector(), [(_token("GitHub token"), github)]),
        (gitlab_token.GitLabTokenDetector(), [(_token("GitLab token"), g) for g in (
            gitlab, ("GR1348941",), ("glcbt-",), ("glimt-",), ("glptt-",), ("glagent-",),
            ("gloas-",))]),
        (openai.OpenAIDetector(), [(_token("OpenAI API key"), ("T3BlbkFJ",))]),
        (slack.SlackDetector(), [(_token("Slack token"), ("xox",)),
                                 (_slack_webhook, ("hooks.slack.com",))]),
        (stripe.StripeDetector(), [(_token("Stripe key"), ("k_live_",))]),
        (sendgrid.SendGridDetector(), [(_token("SendGrid API key"), ("SG.",))]),
        (twilio.TwilioKeyDetector(), [(_token("Twilio key"), ("AC",)),
                                      (_token("Twilio key"), ("SK",))]),
        (telegram_token.TelegramBotTokenDetector(),
         [(_token("Telegram bot token"), ((":",), _TELEGRAM_GATE))]),
        (discord.DiscordBotTokenDetector(),
         [(_token("Discord bot token"), ((".",), _DISCORD_GATE))]),
        (pypi_token.PypiTokenDetector(), [(_token("PyPI token"), ("pypi-",))] * 2),
        (npm.NpmDetector(), [(_npm_rc, ("_authtoken",))]),
        (square_oauth.SquareOAuthDetector(), [(_token("Square OAuth secret"), ("sq0csp-",))]),
        (mailchimp.MailchimpDetector(), [(_token("Mailchimp API key"), ("-us",))]),
        (artifactory.ArtifactoryDetector(), [(_trimmed("Artifactory token"), ("AKC",)),
                                             (_trimmed("Artifactory token"), ("AP",))]),
        (basic_auth.BasicAuthDetector(), [(_url_password(1), ("://",))]),
        (cloudant.CloudantDetector(), [(_exact("Cloudant credentials", 1), _ASSIGN)] * 2
            + [(_exact("Cloudant credentials", 1), ("cloudant.com",))] * 2),
        (ibm_cloud_iam.IbmCloudIamDetector(), [(_exact("IBM Cloud IAM key", 1), _ASSIGN)]),
        (ibm_cos_hmac.IbmCosHmacDetector(), [(_exact("IBM COS HMAC key", 1), _ASSIGN)]),
        (softlayer.SoftlayerDetector(), [(_exact("SoftLayer API key", 1), _ASSIGN),
                                         (_exact("SoftLayer API key", 1), ("softlayer.com",))]),
    ]  # fmt: skip
    # The JWT plugin's regex has no left boundary and backtracks: on a long base64 run it is
    # quadratic (~1 s on 30k characters). Its validator runs on a linear regex instead.
    rules = [_Rule(_JWT, _jwt(jwt.JwtTokenDetector.is_formally_valid), 1, ("eyJ",))]
    for plugin, per_pattern in table:
        patterns = list(plugin.denylist)
        if len(patterns) != len(per_pattern):
            # A detect-secrets release changed this plugin: use its patterns anyway, on whole
            # matches, ungated, and say so (tests pin the pattern counts).
            logger.warning(
                "detect-secrets %s has %d patterns, expected %d: redacting whole matches",
                type(plugin).__name__, len(patterns), len(per_pattern),
            )  # fmt: skip
            per_pattern = [(_token(plugin.secret_type), ())] * len(patterns)
        tier = {private_key.PrivateKeyDetector: 0, basic_auth.BasicAuthDetector: 2}.get(
            type(plugin), 1
        )
        for pattern, (finder, gate) in zip(patterns, per_pattern, strict=True):
            words, gate_re = gate if gate and isinstance(gate[-1], re.Pattern) else (gate, None)
            if pattern.flags & re.IGNORECASE:
                # Every letter class in these patterns has both cases, so matching without
                # the flag on the lowercased text is the same match, ten times faster.
                plain = re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)
                rules.append(_Rule(plain, finder, tier, words, 0, gate_re, True, pattern))
            else:
                rules.append(_Rule(pattern, finder, tier, words, 0, gate_re))
    return rules
