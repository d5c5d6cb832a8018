"""The secrets guard's detector: credentials never reach memory verbatim.

``redact(text)`` replaces every credential it finds with a labelled placeholder
(``[redacted GitHub token]``) and reports the labels, never the values, so "the user has a
GitHub token for the CI" is still remembered. Where a secret sits inside something useful
(a connection string, a webhook URL, a JSON field) only the secret part is replaced.

Detection has two sources. Provider formats that Yelp's ``detect-secrets`` knows come from
its plugins' own ``denylist`` regexes, instantiated once and run here directly (its
``scan_line`` mutates global settings, runs every plugin eagerly and took ~9 ms a line);
its entropy, keyword and public-IP plugins are left out because they flag ordinary text,
hex ids and addresses (docs/secrets-measurement.md). Small named rules below add what it
lacks: newer provider keys, webhook and URL secrets, private key blocks, and credentials
stated in prose ("my bank PIN is 4921").

Invariants: the result is idempotent (a placeholder is never matched again), the call never
raises on any ``str``, and every rule runs only when a cheap substring gate opens, so text
with no candidate costs a few microseconds. Rules are pure compiled regexes: thread-safe.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["LABELS", "Redaction", "redact", "warm_up"]


@dataclass(frozen=True)
class Redaction:
    text: str  # the text with each credential replaced by a labelled placeholder
    found: tuple[str, ...]  # the labels of what was replaced, in text order; never the values


PLACEHOLDER_RE = re.compile(r"\[redacted [A-Za-z0-9 ./()-]{1,40}\]")

# A finder turns a match into (start, end, label) of the part to replace, or None to skip.
Finder = Callable[[re.Match[str], str], "tuple[int, int, str] | None"]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    finder: Finder
    # The rule runs only if one of these substrings occurs (matched case-insensitively
    # unless it has capitals), or this regex matches the lowercased text; () is always open.
    gate: tuple[str, ...] | re.Pattern[str]
    tier: int  # 0 key blocks, 1 provider formats, 2 structural, 3 keywords and prose
    min_digits: int = 0  # and only if the text has at least this many digits


# --- finders ------------------------------------------------------------------------------

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


def _token(label: str, group: int = 0) -> Finder:
    """The matched group, extended over any token characters that follow: detect-secrets'
    fixed-length regexes would otherwise leave the tail of a longer key in place."""

    def find(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        start, end = m.span(group)
        if start < 0:
            return None
        end = _TOKEN_TAIL.match(text, end).end()
        return start, end, label

    return find


def _exact(label: str, group: int = 0) -> Finder:
    def find(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        start, end = m.span(group)
        return None if start < 0 or start == end else (start, end, label)

    return find


def _trimmed(label: str) -> Finder:
    """Artifactory's regexes include the delimiters around the token."""

    def find(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        start, end = m.span()
        while start < end and text[start] in ' \t\r\n="\':':
            start += 1
        while end > start and text[end - 1] in ' \t\r\n"':
            end -= 1
        return (start, end, label) if end > start else None

    return find


def _jwt(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    # The plugin's last part is lazy (it matches "header.payload."): take the signature too.
    start, end = m.span()
    end = _TOKEN_TAIL.match(text, end).end()
    if text[end - 1] == ".":
        end -= 1
    token = text[start:end]
    return (start, end, "JWT") if JwtTokenDetector.is_formally_valid(token) else None


_KEY_END = re.compile(r"-{2,5}\s?END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?\s?-{2,5}")
_KEY_BODY = re.compile(r"(?:[ \t]*\r?\n?[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]{2,30}: [^\n]{0,200}))*")
_PUTTY_END = re.compile(r"Private-MAC: *[0-9a-fA-F]+")


def _private_key(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    """The whole block: from the BEGIN line's dashes to its END line, or when the END is
    missing (a truncated paste), through the base64 body that follows."""
    start = m.start()
    while start > 0 and start > m.start() - 6 and text[start - 1] in "- ":
        start -= 1
    if m.group().startswith("PuTTY"):
        tail = _PUTTY_END.search(text, m.end(), m.end() + 16_000)
    else:
        tail = _KEY_END.search(text, m.end(), m.end() + 16_000)
    if tail:
        return start, tail.end(), "private key"
    line_end = text.find("-", m.end())  # the BEGIN line's closing dashes
    line_end = m.end() if line_end < 0 or line_end > m.end() + 5 else line_end
    line_end = re.compile(r"-*").match(text, line_end).end()
    return start, _KEY_BODY.match(text, line_end).end(), "private key"


def _after(prefix_group: int, label: str) -> Finder:
    """A webhook URL: keep the host and fixed path, replace the secret part."""

    def find(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        return m.end(prefix_group), _TOKEN_TAIL.match(text, m.end()).end(), label

    return find


# --- values stated after a keyword ----------------------------------------------------------

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
    really quite pretty super different default standard generic mine yours ours hers theirs
    changing known needs must should will would can could may might""".split()
)
_WORDISH_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "ful", "ous", "ive", "less", "ment")
_CLAUSE_END = re.compile(r"\s*(?:$|[.,;!?)\n]|\s(?:and|but|so|or|then)\b)")
_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’"}


def _secret_value(m: re.Match[str], text: str, *, mode: str) -> tuple[int, int] | None:
    """The span of ``m['value']`` if it plausibly is the secret. ``mode`` is "prose" (after
    "is": a plain word must end its clause), "assign" (after ":"/"=") or "strict" (must look
    like a password: a digit, a symbol or inner capitals)."""
    start, end = m.span("value")
    value = text[start:end]
    if value[:1] in _QUOTES:
        if len(value) < 3 or value[-1] != _QUOTES[value[0]]:
            return None
        start, end = start + 1, end - 1
        inner = text[start:end]
        return None if _PLACEHOLDER_VALUE.fullmatch(inner) or not inner.strip() else (start, end)
    while end > start and text[end - 1] in ".,;:)]}?":
        end -= 1
    value = text[start:end]
    if len(value) < 3 or _PLACEHOLDER_VALUE.fullmatch(value) or value.lower() in _NOT_A_VALUE:
        return None
    looks_made_up = (
        any(c.isdigit() for c in value)
        or any(not c.isalnum() and c not in "-'’" for c in value)
        or any(c.isupper() for c in value[1:])
    )
    if looks_made_up:
        return start, end
    if mode == "strict" or len(value) < 4 or value.lower().endswith(_WORDISH_SUFFIXES):
        return None
    if mode == "prose" and not _CLAUSE_END.match(text, end):
        return None
    return start, end


_PASSWORD_WORDS = ("password", "passwd", "passphrase", "passcode")


def _label_for_name(name: str) -> str | None:
    n = name.lower().replace("-", "_").replace(".", "_")
    if "passcode" in n:
        return "passcode"
    if any(w in n for w in ("password", "passwd", "passphrase", "pwd")) or re.search(
        r"(?:^|_)(?:pass|pw)(?:$|_|\d)", n
    ):
        return "password"
    if re.search(r"api_?key|access_?key|auth_?key", n) or n in ("key", "x_api_key"):
        return "API key"
    if "private_key" in n or "privatekey" in n:
        return "private key"
    if "secret" in n:
        return "secret"
    if "token" in n:
        return "token"
    return None


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _assignment(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    # The regex starts at the key word (fast to scan for); the name may begin up to 40
    # characters before it ("OPENAI_API_KEY", "db.password", "clientSecret").
    at = m.start("word")
    name_start = at
    while name_start > 0 and at - name_start < 40 and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    if text[at - 2 : at] == "--":
        name_start = at
    name = text[name_start : m.end("word")]
    label = _label_for_name(name)
    if label is None:
        return None
    word = m["word"].lower()
    # A short word inside a longer name must start a name part ("db_pass", not "bypass").
    if word in ("pass", "pw", "pwd", "token", "secret") and at > name_start:
        before = text[at - 1]
        if before.isalnum() and not (before.islower() and text[at].isupper()):
            return None
    quoted = m["value"][:1] in _QUOTES
    short_name = word in ("pass", "pw", "pwd")
    mode = "strict" if short_name else "assign"
    span = _secret_value(m, text, mode=mode)
    if span is None:
        return None
    start, end = span
    if not quoted:
        value = text[start:end]
        query = name_start > 0 and text[name_start - 1] in "?&"
        cut = [value.find(c) for c in ("&", "#") if query and c in value]
        if ";" in value and label == "password":
            cut.append(value.find(";"))
        if cut:
            end = start + min(cut)
    if label in ("token", "secret", "API key") and not _tokenish(text[start:end]):
        return None
    if end <= start:
        return None
    if label == "password" and ";" in text[max(0, name_start - 1) : name_start] + text[end : end + 1]:
        label = "connection string password"
    return start, end, label


def _tokenish(value: str) -> bool:
    """Keys and tokens are long and mix letters with digits; "token: yes" is not one."""
    return len(value) >= 8 and (
        len(value) >= 20 or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))
    )


def _prose_password(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    label = "passcode" if m["kw"].lower().startswith("passcode") else "password"
    mode = "assign" if m["conn"].strip() in (":", "=") else "prose"
    span = _secret_value(m, text, mode=mode)
    return None if span is None else (*span, label)


def _prose_token(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    kw = " ".join(m["kw"].lower().split())
    if kw.startswith(("api", "access key")):
        label = "API key"
    elif kw.startswith(("licen", "product")):
        label = "license key"
    elif kw.startswith("private"):
        label = "private key"
    elif "token" in kw:
        label = "token"
    else:
        label = "secret"
    span = _secret_value(m, text, mode="assign")
    if span is None or not _tokenish(text[span[0] : span[1]]):
        return None
    return (*span, label)


def _codes(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    kw = m["kw"].lower()
    label = "recovery code" if kw.startswith(("backup", "recovery")) else "2FA code"
    return m.start("value"), m.end("value"), label


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_CARD_PREFIX = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35")


def _card(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    if m.start() and text[m.start() - 1].isdigit():
        return None  # the tail of a longer number
    raw = m.group()
    seps = {c for c in raw if not c.isdigit()}
    digits = "".join(c for c in raw if c.isdigit())
    if len(seps) > 1 or not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits):
        return None
    return (m.start(), m.end(), "card number") if _luhn_ok(digits) else None


_IBAN_COUNTRIES = frozenset(
    "AD AE AL AT AZ BA BE BG BH BR CH CR CY CZ DE DK DO EE EG ES FI FO FR GB GE GI GL GR GT HR "
    "HU IE IL IQ IS IT JO KW KZ LB LC LI LT LU LV MC MD ME MK MR MT MU NL NO PK PL PS PT QA RO "
    "RS SA SC SE SI SK SM ST SV TL TN TR UA VA VG XK".split()
)


def _iban(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    if not _standalone(m, text):
        return None
    compact = m.group().replace(" ", "")
    if compact[:2] not in _IBAN_COUNTRIES or not 15 <= len(compact) <= 34:
        return None
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return (m.start(), m.end(), "IBAN") if int(number) % 97 == 1 else None


def _standalone(m: re.Match[str], text: str) -> bool:
    """Not glued to a letter or digit on either side (a cheap \\b done after matching)."""
    start, end = m.span()
    return not (start and text[start - 1].isalnum()) and not (end < len(text) and text[end].isalnum())


def _ssn(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    start, end = m.span()
    if (start and text[start - 1] in "0123456789-") or text[end : end + 1] in ("-",) or (
        end < len(text) and text[end].isdigit()
    ):
        return None
    if text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit():
        return None
    area, group, serial = m.group().split("-")
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return None
    return start, end, "social security number"


def _aws_secret(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    v = m.group()
    mixed = any(c.isdigit() for c in v) and any(c.islower() for c in v)
    return (m.start(), m.end(), "AWS secret key") if mixed and any(c.isupper() for c in v) else None


def _authorization(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    start, end = m.span("value")
    value = text[start:end]
    if _PLACEHOLDER_VALUE.fullmatch(value) or len(value) < 8:
        return None
    scheme = (m["scheme"] or "").lower()
    return start, end, "basic auth credentials" if scheme == "basic" else "bearer token"


# --- the rules ------------------------------------------------------------------------------

_I = re.IGNORECASE
_MID = r"(?:\s+(?:for|to|of|on|at)\s+(?:[\w.@'’\-]+\s+){0,3}?[\w.@'’\-]+)?"
_CONN = (
    r"(?P<conn>\s*[:=]|\s+-\s|\s+(?:is\s+now|is\s+still|is|was|has\s+been\s+(?:changed|set|updated)"
    r"\s+to|(?:was\s+)?(?:changed|set|updated|reset)\s+to|will\s+be|remains|reads)(?:\s*:)?)\s*"
)
_VALUE = r"(?P<value>\"[^\"\n]{1,128}\"|'[^'\n]{1,128}'|“[^”\n]{1,128}”|‘[^’\n]{1,128}’|`[^`\n]{1,128}`|[^\s\"'“”‘’`]{1,128})"
_DIGITS_END = r"(?![0-9]|[.,/:-][0-9])"


def _own_rules() -> list[_Rule]:
    def rule(
        pattern: str,
        finder: Finder,
        gate: tuple[str, ...],
        tier: int,
        flags: int = 0,
        min_digits: int = 0,
    ) -> _Rule:
        return _Rule(re.compile(pattern, flags), finder, gate, tier, min_digits)

    return [
        rule(r"-{2,5}\s?BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?", _private_key, ("private key",), 0),
        # provider formats detect-secrets 1.5 lacks
        rule(r"sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_\-]{20,}", _token("Anthropic API key"), ("sk-ant-",), 1),
        rule(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", _token("OpenAI API key"), ("sk-",), 1),
        rule(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]{48}(?![A-Za-z0-9])", _token("OpenAI API key"), ("sk-",), 1),
        rule(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_\-]{32,}", _token("API key"), ("sk-",), 1),
        rule(r"AIza[0-9A-Za-z_\-]{35}", _token("Google API key"), ("aiza",), 1),
        rule(r"GOCSPX-[A-Za-z0-9_\-]{28}", _token("Google OAuth client secret"), ("gocspx-",), 1),
        rule(r"ya29\.[0-9A-Za-z_\-]{20,}", _token("Google OAuth token"), ("ya29.",), 1),
        rule(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}", _token("Hugging Face token"), ("hf_",), 1),
        rule(r"github_pat_[A-Za-z0-9_]{22,}", _token("GitHub token"), ("github_pat_",), 1),
        rule(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}", _token("npm token"), ("npm_",), 1),
        rule(r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}", _token("Stripe key"), ("k_live_", "k_test_"), 1),
        rule(r"whsec_[A-Za-z0-9]{24,}", _token("Stripe webhook secret"), ("whsec_",), 1),
        rule(r"xapp-[0-9]-[A-Za-z0-9-]{20,}", _token("Slack token"), ("xapp-",), 1),
        rule(r"(?<![A-Za-z0-9_])gsk_[A-Za-z0-9]{40,}", _token("Groq API key"), ("gsk_",), 1),
        rule(r"(?<![A-Za-z0-9_-])xai-[A-Za-z0-9]{60,}", _token("xAI API key"), ("xai-",), 1),
        rule(r"pplx-[A-Za-z0-9]{40,}", _token("Perplexity API key"), ("pplx-",), 1),
        rule(r"(?<![A-Za-z0-9_])r8_[A-Za-z0-9]{30,}", _token("Replicate API token"), ("r8_",), 1),
        # webhook URLs: keep the host, replace the secret path
        rule(r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/]{20,}",
             _after(1, "Slack webhook URL"), ("hooks.slack.com",), 1),
        rule(r"(https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/)[0-9]{5,}/[A-Za-z0-9_\-]{20,}",
             _after(1, "Discord webhook URL"), ("discord",), 1),
        rule(r"(https://[A-Za-z0-9.\-]*(?:webhook\.office|outlook\.office)\.com/webhook(?:b2)?/)[A-Za-z0-9@/\-]{30,}",
             _after(1, "Microsoft Teams webhook URL"), ("office.com/webhook",), 1),
        rule(r"(https://hooks\.zapier\.com/hooks/catch/)[0-9]+/[A-Za-z0-9]+",
             _after(1, "Zapier webhook URL"), ("hooks.zapier.com",), 1),
        # structural
        rule(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'<>]*:(?P<value>[^\s@/?#\"'<>]{1,256})@(?=[A-Za-z0-9\[._\-])",
             _url_password, ("://",), 2),
        rule(r"\b(?:SharedAccessKey|AccountKey)\s*=\s*([A-Za-z0-9+/]{30,}={0,2})",
             _exact("Azure shared access key", 1), ("accesskey", "accountkey"), 2),
        rule(r"\bAuthorization[\"']?\s*[:=]\s*[\"']?(?:(?P<scheme>Bearer|Basic|Token|Bot|Digest|ApiKey|Key)\s+)?(?P<value>[A-Za-z0-9_\-+/=.~:]{1,2048})",
             _authorization, ("authorization",), 2, _I),
        rule(r"\bBearer\s+(?P<value>(?=[A-Za-z0-9_\-+/=.~]*[0-9])[A-Za-z0-9_\-+/=.~]{16,2048})",
             _authorization, ("bearer",), 2, _I),
        rule(r"[?&;](?:sig|signature|key)=(?P<value>[A-Za-z0-9%_\-+/=.~]{16,})",
             _exact("token", 1), ("sig=", "signature=", "key="), 2),
        rule(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _aws_secret, ("aws", "akia", "asia"), 2),
        # Patterns that open with a class, not a lookbehind, so the scan skips non-digits fast;
        # the boundary checks are done by the finders.
        rule(r"[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{1,7}(?![0-9])|3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5}(?![0-9])",
             _card, (), 2, min_digits=13),
        rule(r"[0-9]{3}-[0-9]{2}-[0-9]{4}", _ssn, ("-",), 2, min_digits=9),
        rule(r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?", _iban, (), 2, min_digits=8),
        # keywords: assignments in config, env, JSON, queries and command lines
        rule(r"(?P<word>password|passwd|passphrase|passcode|pwd|pass|pw|secret|token|api[_.\-]?key|apikey|access[_.\-]?key|auth[_.\-]?key|private[_.\-]?key|client[_.\-]?secret)(?:[_.\-]?[0-9])?(?P<q>[\"']?)\s*(?::=|=>|=|:)\s*" + _VALUE,
             _assignment, ("pass", "pw", "secret", "token", "key"), 3, _I),
        rule(r"--(?P<word>password|passwd|pass|token|secret|api-key|apikey)[= ]+" + _VALUE,
             _assignment, ("--",), 3, _I),
        # credentials stated in prose
        rule(r"\b(?P<kw>pass(?:word|phrase|code)|passwd|wi-?fi\s+key|wpa2?\s+key|network\s+key)s?\b" + _MID + _CONN + _VALUE,
             _prose_password, ("pass", "key"), 3, _I),
        rule(r"\b(?:PIN|PUK)s?\b(?:\s*(?i:code|number|no\.?|#))?" + _MID + r"(?:\s*(?i:is|was|is\s+now|:|=|-|#))?\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
             _exact("PIN", 1), ("pin", "puk"), 3),
        rule(r"\bpin(?:\s*(?:code|number))?" + _MID + r"\s*(?:is|was|is\s+now|:|=)\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
             _exact("PIN", 1), ("pin",), 3, _I),
        rule(r"\b(?:garage(?:\s+door)?|front\s+door|back\s+door|door|gate|alarm|lock(?:box)?|key\s?(?:pad|box)|locker|safe|entry|entrance|access|building|apartment|unlock|parking|voicemail)\s+(?:code|combo|combination|pin)\b" + _MID + r"(?:\s*(?:is|was|is\s+now|:|=|-|#))?\s*(?P<value>[0-9][0-9#*\-]{2,11})(?![0-9])",
             _exact("access code", 1), ("code", "combo", "combination", "pin"), 3, _I),
        rule(r"\bcombination" + _MID + r"\s*(?:is|was|:|=)\s*(?P<value>[0-9]{1,3}(?:[-\s][0-9]{1,3}){2,4})(?![0-9])",
             _exact("access code", 1), ("combination",), 3, _I),
        rule(r"\b(?P<kw>backup|recovery|2fa|two[- ]factor|mfa|otp|one[- ]time|verification|authenticator|security|login|sms|totp)\s+(?:codes?|keys?|pins?)\b" + _MID + r"(?:\s*(?:are|is|were|was|:|=|-))?\s*(?P<value>(?=[A-Za-z-]*[0-9])[A-Za-z0-9]{3,10}(?:-[A-Za-z0-9]{3,10}){0,3}(?:(?:\s*[,;]\s*|\s+(?:and\s+)?)(?=[A-Za-z-]*[0-9])[A-Za-z0-9]{3,10}(?:-[A-Za-z0-9]{3,10}){0,3}){0,15})(?![A-Za-z0-9])",
             _codes, ("code", "key", "pin"), 3, _I),
        rule(r"\b(?:seed|recovery|mnemonic|secret)\s+(?:phrase|words)\s*(?:is|are|:|=)\s*(?P<value>(?:[a-z]{3,8}\s+){11,23}[a-z]{3,8})\b",
             _exact("recovery phrase", 1), ("phrase", "words"), 3, _I),
        rule(r"\b(?:CVV2?|CVC2?|CSC|CID)\b(?:\s*(?i:code|number))?\s*(?i:is|was|:|=|-)?\s*(?P<value>[0-9]{3,4})(?![0-9])",
             _exact("card security code", 1), ("cvv", "cvc", "csc", "cid"), 3),
        rule(r"\b(?i:SSN|social\s+security(?:\s+(?:number|no\.?|#))?)\b\D{0,20}?(?P<value>[0-9]{3}[ .]?[0-9]{2}[ .]?[0-9]{4})(?![0-9])",
             _exact("social security number", 1), ("ssn", "social security"), 3),
        rule(r"\b(?i:passport)\s*(?i:number|no\.?|#)?\s*(?i:is|was|:|=|-)?\s*(?P<value>(?=[A-Z]*[0-9])[A-Z0-9]{6,9})\b",
             _exact("passport number", 1), ("passport",), 3),
        rule(r"\b(?P<kw>api\s+key|access\s+key|secret\s+key|secret|auth(?:entication)?\s+token|access\s+token|refresh\s+token|bearer\s+token|token|licen[cs]e\s+key|product\s+key|private\s+key|encryption\s+key|master\s+key|client\s+secret|app\s+secret|signing\s+secret|webhook\s+secret)s?\b" + _MID + _CONN + _VALUE,
             _prose_token, ("key", "secret", "token"), 3, _I),
    ]  # fmt: skip


def _url_password(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    start, end = m.span("value")
    value = text[start:end]
    if _PLACEHOLDER_VALUE.fullmatch(value):
        return None
    return start, end, "password"


# detect-secrets plugins used, per pattern of their denylist: (finder, gate). Gates are
# sound: a pattern cannot match unless its gate opens (the slow keyword-assignment plugins,
# Cloudant, IBM and SoftLayer, all need a key word, an assignment and a 24+ character value).
_AUTH_ASSIGN_GATE = re.compile(
    r"(?:key|pwd|pw|password|pass|token)[\"']?\]? *(?:=|:|:=|=>| +|::) *[\"']?[a-z0-9_\-]{24}"
)
_TELEGRAM_GATE = re.compile(r"[0-9]:[0-9a-z_-]{35}")  # opens with a class: "\d{8,10}:" is slow
_DISCORD_GATE = re.compile(r"\.[a-z0-9_-]{6}\.")


def _detect_secrets_rules() -> list[_Rule]:
    from detect_secrets.plugins import (
        artifactory,
        aws,
        azure_storage_key,
        basic_auth,
        cloudant,
        discord,
        github_token,
        gitlab_token,
        ibm_cloud_iam,
        ibm_cos_hmac,
        jwt,
        mailchimp,
        npm,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        softlayer,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    assign = _AUTH_ASSIGN_GATE
    table: list[tuple[Any, list[tuple[Finder, tuple[str, ...] | re.Pattern[str]]]]] = [
        (private_key.PrivateKeyDetector(), [(_private_key, ("PRIVATE KEY", "PuTTY-User-Key"))] * 8),
        (aws.AWSKeyDetector(), [
            (_token("AWS access key"), ("A3T", "ABIA", "ACCA", "AKIA", "ASIA")),
            (_exact("AWS secret key", 1), ("aws",)),
        ]),
        (azure_storage_key.AzureStorageKeyDetector(), [(_exact("Azure storage key"), ("accountkey=",))]),
        (github_token.GitHubTokenDetector(), [(_token("GitHub token"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"))]),
        (gitlab_token.GitLabTokenDetector(), [
            (_token("GitLab token"), ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")),
            (_token("GitLab token"), ("GR1348941",)),
            (_token("GitLab token"), ("glcbt-",)),
            (_token("GitLab token"), ("glimt-",)),
            (_token("GitLab token"), ("glptt-",)),
            (_token("GitLab token"), ("glagent-",)),
            (_token("GitLab token"), ("gloas-",)),
        ]),
        (jwt.JwtTokenDetector(), [(_jwt, ("eyJ",))]),
        (openai.OpenAIDetector(), [(_token("OpenAI API key"), ("T3BlbkFJ",))]),
        (slack.SlackDetector(), [
            (_token("Slack token"), ("xox",)),
            (_after_services, ("hooks.slack.com",)),
        ]),
        (stripe.StripeDetector(), [(_token("Stripe key"), ("k_live_",))]),
        (sendgrid.SendGridDetector(), [(_token("SendGrid API key"), ("SG.",))]),
        (twilio.TwilioKeyDetector(), [(_token("Twilio key"), ("AC",)), (_token("Twilio key"), ("SK",))]),
        (telegram_token.TelegramBotTokenDetector(), [(_token("Telegram bot token"), _TELEGRAM_GATE)]),
        (discord.DiscordBotTokenDetector(), [(_token("Discord bot token"), _DISCORD_GATE)]),
        (pypi_token.PypiTokenDetector(), [(_token("PyPI token"), ("pypi-",))] * 2),
        (npm.NpmDetector(), [(_npm_rc, ("_authtoken",))]),
        (square_oauth.SquareOAuthDetector(), [(_token("Square OAuth secret"), ("sq0csp-",))]),
        (mailchimp.MailchimpDetector(), [(_token("Mailchimp API key"), ("-us",))]),
        (artifactory.ArtifactoryDetector(), [(_trimmed("Artifactory token"), ("AKC",)), (_trimmed("Artifactory token"), ("AP",))]),
        (basic_auth.BasicAuthDetector(), [(_url_group_password, ("://",))]),
        (cloudant.CloudantDetector(), [
            (_exact("Cloudant credentials", 1), assign),
            (_exact("Cloudant credentials", 1), assign),
            (_exact("Cloudant credentials", 1), ("cloudant.com",)),
            (_exact("Cloudant credentials", 1), ("cloudant.com",)),
        ]),
        (ibm_cloud_iam.IbmCloudIamDetector(), [(_exact("IBM Cloud IAM key", 1), assign)]),
        (ibm_cos_hmac.IbmCosHmacDetector(), [(_exact("IBM COS HMAC key", 1), assign)]),
        (softlayer.SoftlayerDetector(), [
            (_exact("SoftLayer API key", 1), assign),
            (_exact("SoftLayer API key", 1), ("softlayer.com",)),
        ]),
    ]  # fmt: skip
    rules = []
    for plugin, per_pattern in table:
        patterns = list(plugin.denylist)
        if len(patterns) != len(per_pattern):
            # A new detect-secrets release changed this plugin: still use every pattern,
            # redacting whole matches, and say so once.
            logger.warning(
                "detect-secrets %s has %d patterns, expected %d: whole matches are redacted",
                type(plugin).__name__, len(patterns), len(per_pattern),
            )  # fmt: skip
            per_pattern = [(_token(plugin.secret_type), ())] * len(patterns)
        tier = 0 if isinstance(plugin, private_key.PrivateKeyDetector) else 1
        if isinstance(plugin, basic_auth.BasicAuthDetector):
            tier = 2
        for pattern, (finder, gate) in zip(patterns, per_pattern, strict=True):
            rules.append(_Rule(pattern, finder, gate, tier))
    return rules


def _after_services(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    cut = m.group().lower().find("/services/") + len("/services/")
    return m.start() + cut, _TOKEN_TAIL.match(text, m.end()).end(), "Slack webhook URL"


def _npm_rc(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    # The plugin's group runs to the end of the line: keep only the token.
    start = m.start(1)
    end = re.compile(r"[A-Za-z0-9_\-]*").match(text, start).end()
    return (start, end, "npm token") if end > start else None


def _url_group_password(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    start, end = m.span(1)
    return None if _PLACEHOLDER_VALUE.fullmatch(text[start:end]) else (start, end, "password")


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    from detect_secrets.__version__ import VERSION

    ds = _detect_secrets_rules()
    rules = tuple(sorted(ds + _own_rules(), key=lambda r: r.tier))
    logger.info(
        "secrets guard: %d rules (%d from detect-secrets %s)",
        len(rules), len(ds), VERSION,
    )  # fmt: skip
    return rules


def warm_up() -> int:
    """Load the detectors now (the first call imports detect-secrets, ~0.2 s) and return
    how many rules are active. Optional: ``redact`` loads them on first use."""
    return len(_rules())


_DIGITS = str.maketrans("", "", "0123456789")


def _gate_open(rule: _Rule, text: str, lower: str, digits: int, memo: dict[int, bool]) -> bool:
    if digits < rule.min_digits:
        return False
    gate = rule.gate
    if isinstance(gate, re.Pattern):
        if id(gate) not in memo:
            memo[id(gate)] = gate.search(lower) is not None
        return memo[id(gate)]
    return not gate or any(g in (lower if g.islower() else text) for g in gate)


def _candidates(text: str) -> list[tuple[int, int, int, str]]:
    """Every (tier, start, end, label) some rule proposes, before overlaps are resolved."""
    lower = text.lower()
    digits = len(text) - len(text.translate(_DIGITS))
    memo: dict[int, bool] = {}
    found = []
    for rule in _rules():
        if not _gate_open(rule, text, lower, digits, memo):
            continue
        for m in rule.pattern.finditer(text):
            hit = rule.finder(m, text)
            if hit is not None and hit[1] > hit[0]:
                found.append((rule.tier, hit[0], hit[1], hit[2]))
    return found


def redact(text: str) -> Redaction:
    """Replace each credential in ``text`` with ``[redacted <label>]``."""
    candidates = _candidates(text)
    if not candidates:
        return Redaction(text, ())
    taken = [(m.start(), m.end()) for m in PLACEHOLDER_RE.finditer(text)]
    chosen: list[tuple[int, int, str]] = []
    # Block rules first, then provider formats, then the generic rules: the most specific
    # label wins, and a longer span wins over a shorter one at the same place.
    for _tier, start, end, label in sorted(candidates, key=lambda c: (c[0], c[1], -c[2])):
        if any(start < b and a < end for a, b in taken):
            continue
        taken.append((start, end))
        chosen.append((start, end, label))
    if not chosen:
        return Redaction(text, ())
    chosen.sort()
    parts, pos = [], 0
    for start, end, label in chosen:
        parts += [text[pos:start], f"[redacted {label}]"]
        pos = end
    parts.append(text[pos:])
    labels = tuple(label for _, _, label in chosen)
    logger.debug("redacted %d secret(s): %s", len(labels), ", ".join(labels))
    return Redaction("".join(parts), labels)


LABELS: tuple[str, ...] = (
    "2FA code", "API key", "AWS access key", "AWS secret key", "Anthropic API key",
    "Artifactory token", "Azure shared access key", "Azure storage key",
    "basic auth credentials", "bearer token", "card number", "card security code",
    "Cloudant credentials", "connection string password", "Discord bot token",
    "Discord webhook URL", "GitHub token", "GitLab token", "Google API key",
    "Google OAuth client secret", "Google OAuth token", "Groq API key", "Hugging Face token",
    "IBAN", "IBM COS HMAC key", "IBM Cloud IAM key", "JWT", "license key", "Mailchimp API key",
    "Microsoft Teams webhook URL", "npm token", "OpenAI API key", "passcode", "passport number",
    "password", "Perplexity API key", "PIN", "private key", "PyPI token", "recovery code",
    "recovery phrase", "Replicate API token", "secret", "SendGrid API key", "Slack token",
    "Slack webhook URL", "social security number", "SoftLayer API key", "Square OAuth secret",
    "Stripe key", "Stripe webhook secret", "Telegram bot token", "token", "Twilio key",
    "xAI API key", "Zapier webhook URL", "access code",
)  # fmt: skip
