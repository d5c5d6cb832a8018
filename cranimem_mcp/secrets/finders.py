"""The secrets guard's finders: which part of a match is the secret, or none at all.

A finder is a pure function of a rule's match and the original text that returns the span to
replace and its label (:data:`Hit`), or ``None`` to skip a look-alike: a token extended over
its tail, a webhook URL that keeps its host, a connection string that keeps everything but
the password, a value stated after a keyword that must look like a value ("my password is on
the sticky note" is not one) and is no quantity ("Monthly pass: $156.00", "Beartooth Pass:
100 miles", "Pin: 1500 pieces"), a card number that passes Luhn's check, an IBAN its mod-97
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


# --- values that are plainly no credential ---------------------------------------------------
#
# "1-Day Pass: ¥2,670", "Beartooth Pass: 100 miles", "Pin: 1500 pieces": the keyword is an
# ordinary word there, and what follows it is a quantity. A credential is one made-up token;
# a price, an amount with its unit, a date or a time is not, whichever keyword precedes it.

# Bounded runs: a regex that backtracks over a 30,000-digit run, trying every unit at each
# digit, costs 0.1 s; no quantity has more than twelve digits.
_NUMBER = r"[~≈]?(?:[0-9]{1,3}(?:,[0-9]{3}){1,4}|[0-9]{1,12})(?:\.[0-9]{1,6})?\+?"
_CURRENCY_SIGN = r"(?:US|C|A|AU|NZ|HK|S|R|NT|MX)?[$€£¥₹₩₽₺฿₫₱₪¢]"
_CURRENCY_CODE = (
    r"usd|eur|gbp|jpy|cny|rmb|inr|krw|aud|cad|chf|nzd|hkd|sgd|thb|mxn|brl|zar|sek|nok|dkk|pln"
    r"|vnd|php|idr|myr|aed|rs\.?"
)
# Two letters at least when written together: "1234m" or "2580a" may well be a code, "45min"
# and "10km" are not.
_UNIT = (
    r"%|°[cf]?|percent|"
    # length, weight, volume
    r"mi|miles?|km|kilomet(?:er|re)s?|met(?:er|re)s?|ft|feet|foot|inch(?:es)?|yards?|cm|mm"
    r"|kg|kilos?|grams?|lbs?|pounds?|oz|ounces?|mg|mcg|tons?|tonnes?|ml|lit(?:er|re)s?|cups?"
    r"|tbsp|tsp|tablespoons?|teaspoons?|gallons?|gal|quarts?|pints?"
    # time
    r"|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|wks?|months?|mos|years?|yrs?"
    r"|nights?|decades?"
    # rates, energy, data
    r"|degrees?|mph|kph|km/h|kmh|knots?|mpg|cal|calories|kcal|kj|mah|kwh|wh|gb|mb|tb|kb|gbps"
    r"|mbps|fps|px|dpi|hz|ghz|mhz"
    # things counted
    r"|people|persons?|guests?|adults?|child(?:ren)?|kids?|tickets?|rides?|visits?|trips?"
    r"|times|stops?|points?|pieces?|items?|characters?|chars?|letters?|digits?|words?|entries"
    r"|attempts?|uses|players?|members?|seats?|rooms?|floors?|pages?|units?|servings?|slices?"
    r"|steps|reps?|sets|laps?"
    # money
    r"|dollars?|bucks?|cents?|euros?|yen|yuan|rupees?|pesos?|francs?|baht|reais|rand|lira"
    r"|" + _CURRENCY_CODE
)
_MONTH = r"(?:0?[1-9]|1[0-2])"
_DAY = r"(?:0?[1-9]|[12][0-9]|3[01])"
_YEAR = r"(?:19|20)[0-9]{2}"
_RANGE = _NUMBER + r"(?:\s*(?:-|–|—|to)\s*" + _NUMBER + r")?"
_CLOCK = r"(?:[01]?[0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?"
_QUANTITY = re.compile(
    r"(?:"
    + "|".join(
        [
            _CURRENCY_SIGN + r"\s?" + _NUMBER + r"(?:\s?(?:k|m|bn|million|billion)\b)?",  # ¥2,670
            r"(?:" + _CURRENCY_CODE + r")\s?" + _NUMBER,  # USD 25, Rs. 500
            # 100 miles, 10-15 minutes, 4.5-mile, 45min; a one-letter unit only apart: 2,500 m
            _RANGE + r"(?:(?:\s?|-)(?:" + _UNIT + r")|\s[mghls])",
            _YEAR + r"[-/.]" + _MONTH + r"[-/.]" + _DAY,  # 2024-05-01
            r"(?:" + _DAY + r"[-/.]" + _MONTH + r"|" + _MONTH + r"[-/.]" + _DAY + r")[-/.]" + _YEAR,
            r"(?:" + _CLOCK + r"|1[0-2]|0?[1-9])\s?(?:am|pm|a\.m\.|p\.m\.)",  # 9pm, 10:30 am
            _CLOCK,  # 17:45
            r"(?:1[89]|20)[0-9]0s",  # the 1990s
            r"[0-9]{1,6}(?:st|nd|rd|th)",  # the 2nd
        ]
    )
    + r")(?![\w$€£¥%°'’])",
    re.IGNORECASE,
)
# After the bare word "pass" (a ticket, a mountain pass, a pass in a game) a small count or a
# fraction is no value either ("pass: 100", "Pass: 3/4 of a cup"); after "password" it may be.
_COUNT = re.compile(
    r"(?:[0-9]{1,2}/[0-9]{1,2}|[0-9]{1,3}(?:,[0-9]{3}){1,4}|[0-9]{1,3}\+?)(?![\w$€£¥%°'’])"
)


def _quantity(text: str, start: int, end: int, counts: bool = False) -> bool:
    """Whether the value at ``text[start:end]`` is a price, an amount with its unit, a date,
    a time or an ordinal (with ``counts``: also a small count or a fraction). The match must
    cover the whole value: "$1,200!" or "100kmx9" are left to the other checks."""
    for pattern in (_QUANTITY, _COUNT) if counts else (_QUANTITY,):
        m = pattern.match(text, start)
        if m and m.end() >= end:
            return True
    return False


def _value_end(text: str, start: int, end: int) -> int:
    """The end of an unquoted value without its trailing punctuation, nor the ``**`` or
    ``__`` that closes a Markdown emphasis opened before it on its line: in "**Use a password
    manager**" the value is "manager", a word, not "manager**", a word with symbols. Only the
    nearest run before the value is read, so a value replaced earlier in the line never
    changes the decision (the guard stays idempotent)."""
    while end > start:
        run = text[end - 2 : end]
        if text[end - 1] in ".,;:)]}?":
            end -= 1
        elif run in ("**", "__") and end - 2 > start and _opens_emphasis(text, run, start):
            end -= 2
        else:
            break
    return end


def _opens_emphasis(text: str, run: str, before: int) -> bool:
    """Whether the nearest ``run`` before ``before``, on the same line, opens an emphasis
    (CommonMark's left-flanking run: "**Use", not "manager** " nor "Tip**:")."""
    at = text.rfind(run, 0, before)
    if at < 0 or "\n" in text[at:before]:
        return False
    after, prev = text[at + 2 : at + 3], text[at - 1 : at]
    if not after or after.isspace():
        return False
    return after.isalnum() or not prev or prev.isspace() or not prev.isalnum()


# A tag of words ("#security", "#infra-team"); one with a digit may be a made-up value.
_HASHTAG = re.compile(r"#[^\W\d_][^\W\d]*(?:-[^\W\d]+)*:?")


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
    end = _value_end(text, start, end)
    value = text[start:end]
    if len(value) < 3 or _PLACEHOLDER_VALUE.fullmatch(value) or value.lower() in _NOT_A_VALUE:
        return None
    if mode != "assign" and _HASHTAG.fullmatch(value):
        return None  # "Argon2id for stored passwords #security": a tag, not a value
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


# Capitalised words before "Pass" that make it an account's password, not a place or a ticket.
_ACCOUNT_WORDS = frozenset(
    """wi-fi wifi wlan network router modem admin administrator root user username login
    account email e-mail mail db database server ssh ftp sftp vpn sudo master app portal system
    computer laptop pc phone device my your our his her their the new old current default
    temporary temp""".split()
)
_NAME_BEFORE = re.compile(r"([A-Z0-9][\w'’.-]*) $")
_WORDS_OF_A_NAME = re.compile(r"[A-Za-z][A-Za-z'’.-]*")


def _pass_of_a_name(text: str, at: int, value: str) -> bool:
    """ "Beartooth Pass: McCarthy", "Logan Pass: Going-to-the-Sun": "Pass" capitalised after a
    capitalised word names a place or a ticket, and a value made of letters is a word or a
    name (its inner capital or hyphen made it look made up). "Wi-Fi Pass" and "Admin Pass"
    are an account's password, and a value with a digit or a symbol is judged as always."""
    before = _NAME_BEFORE.search(text, max(0, at - 40), at)
    return (
        text[at] == "P"
        and before is not None
        and before[1].lower() not in _ACCOUNT_WORDS
        and _WORDS_OF_A_NAME.fullmatch(value) is not None
    )


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
    quoted = text[m.start("value")] in _QUOTES  # a quoted value is what it says: no guessing
    if mode == "prose" and not quoted:
        # "Monthly pass: $156.00", "Beartooth Pass: 100 miles": after a colon in prose the bare
        # word "pass" is a ticket or a mountain pass as often as a password.
        bare_pass = word == "pass" and name_start == at
        if _quantity(text, start, end, counts=bare_pass):
            return None
        if bare_pass and _pass_of_a_name(text, at, text[start:end]):
            return None
    if not quoted:
        value = text[start:end]
        stops = "&#" if name_start and text[name_start - 1] in "?&" else ""
        stops += ";" if label == "password" else ""
        cuts = [i for i in (value.find(c) for c in stops) if i >= 0]
        end = start + min(cuts) if cuts else end
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
    mode = _conn_mode(m)
    span = _secret_value(m, text, mode)
    if span is None:
        return None
    if mode != "assign" and text[m.start("value")] not in _QUOTES and _quantity(text, *span):
        return None  # "the password is 12 characters", "passcode: 2 hours"
    return (*span, label)


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


def find_number(label: str) -> Finder:
    """A PIN and the like: the ``value`` group, unless it is a quantity ("Pin: 1500 pieces",
    "PIN: 2000 mAh")."""

    def find(m: re.Match[str], text: str) -> Hit | None:
        start, end = m.span("value")
        return None if _quantity(text, start, end) else (start, end, label)

    return find


def find_access_code(m: re.Match[str], text: str) -> Hit | None:
    if not _ACCESS_QUALIFIER.search(_before(text, m.start(), 20)):
        return None
    start, end = m.span("value")
    if _quantity(text, start, end):
        return None  # "the gate code is 1000 feet away", "door code: 2024-05-01"
    return start, end, "access code"


def find_auth_codes(m: re.Match[str], text: str) -> Hit | None:
    q = _CODE_QUALIFIER.search(_before(text, m.start(), 20))
    if q is None or _quantity(text, *m.span("value")):
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
