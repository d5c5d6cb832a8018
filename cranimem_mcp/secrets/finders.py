"""The secrets guard's finders: which part of a match is the secret, or none at all.

A finder is a pure function of a rule's match and the original text that returns the span to
replace and its label (:data:`Hit`), or ``None`` to skip a look-alike: a token extended over
its tail, a webhook URL that keeps its host, a connection string that keeps everything but
the password, a value stated after a keyword that must look like a value ("my password is on
the sticky note" is not one), a card number that passes Luhn's check, an IBAN its mod-97
check. The rules that pair a regex with its finder are :mod:`cranimem_mcp.secrets.rules`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Hit = tuple[int, int, str]  # (start, end, label) of the part to replace
Finder = Callable[[re.Match[str], str], Hit | None]  # match, original text -> hit or skip


# --- finders: which part of a match is the secret -------------------------------------------

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


def find_token(label: str, group: int = 0) -> Finder:
    """The group, extended over token characters that follow: a fixed-length regex would
    otherwise leave the tail of a longer key in place."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if start < 0 else (start, _TOKEN_TAIL.match(text, end).end(), label)

    return find


def find_exact(label: str, group: int | str = 0) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if start < 0 else (start, end, label)

    return find


def find_trimmed(label: str) -> Finder:
    """Artifactory's regexes include the delimiters around the token."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        value = m.group()
        start = m.start() + len(value) - len(value.lstrip(" \t\r\n=\":'"))
        return start, m.start() + len(value.rstrip(' \t\r\n"')), label

    return find


def find_after(prefix_group: int, label: str) -> Finder:
    """A webhook URL: keep the host and fixed path, replace the secret path."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        return m.end(prefix_group), _TOKEN_TAIL.match(text, m.end()).end(), label

    return find


def find_jwt(is_valid: Callable[[str], bool]) -> Finder:
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


def find_private_key(m: re.Match[str], text: str) -> Hit | None:
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


def find_url_password(group: int | str) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span(group)
        return None if _PLACEHOLDER_VALUE.fullmatch(text[start:end]) else (start, end, "password")

    return find


def find_slack_webhook(m: re.Match[str], text: str) -> Hit | None:
    cut = m.group().lower().find("/services/") + len("/services/")
    return m.start() + cut, _TOKEN_TAIL.match(text, m.end()).end(), "Slack webhook URL"


def find_npm_rc(m: re.Match[str], text: str) -> Hit | None:
    # The plugin's group runs to the end of the line: keep only the token.
    start = m.start(1)
    return start, _TOKEN_TAIL.match(text, start).end(), "npm token"


def find_aws_secret(m: re.Match[str], text: str) -> Hit | None:
    v = m.group()  # mixed case and digits: not a git SHA, not a word
    if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
        return m.start(), m.end(), "AWS secret key"
    return None


def find_authorization(m: re.Match[str], text: str) -> Hit | None:
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


def find_assignment(m: re.Match[str], text: str) -> Hit | None:
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


def find_prose_password(m: re.Match[str], text: str) -> Hit | None:
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


def find_prose_token(m: re.Match[str], text: str) -> Hit | None:
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


def find_access_code(m: re.Match[str], text: str) -> Hit | None:
    if not _ACCESS_QUALIFIER.search(_before(text, m.start(), 20)):
        return None
    return m.start("value"), m.end("value"), "access code"


def find_auth_codes(m: re.Match[str], text: str) -> Hit | None:
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


def find_card(m: re.Match[str], text: str) -> Hit | None:
    if m.start() and text[m.start() - 1].isdigit():
        return None  # the tail of a longer number
    raw = m.group()
    digits = "".join(c for c in raw if c.isdigit())
    if len(set(raw) - set(digits)) > 1 or not 13 <= len(digits) <= 19:
        return None  # mixed separators
    if not _CARD_PREFIX.match(digits) or not _luhn_ok(digits):
        return None
    return m.start(), m.end(), "card number"


def find_ssn(m: re.Match[str], text: str) -> Hit | None:
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


def find_iban(m: re.Match[str], text: str) -> Hit | None:
    start, end = m.span()
    if (start and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
        return None
    compact = m.group().replace(" ", "")
    if compact[:2] not in _IBAN_COUNTRIES or not 15 <= len(compact) <= 34:
        return None
    number = int("".join(str(int(c, 36)) for c in compact[4:] + compact[:4]))
    return (start, end, "IBAN") if number % 97 == 1 else None


def find_after_eq(label: str) -> Finder:
    def find(m: re.Match[str], text: str) -> Hit | None:
        start = m.start() + m.group().index("=") + 1
        while text[start] == " ":
            start += 1
        return start, m.end(), label

    return find
