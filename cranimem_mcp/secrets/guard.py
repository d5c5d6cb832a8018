"""The secrets guard's detector: credentials never reach memory verbatim.

``redact(text)`` replaces every credential it finds with a labelled placeholder
(``[redacted GitHub token]``) and reports the labels, never the values, so "the user has a
GitHub token for the CI" is still remembered. Where a secret sits inside something useful
(a connection string, a webhook URL, a JSON field) only the secret part is replaced.

What counts as a credential lives in ``secret_rules``: the patterns of Yelp's
``detect-secrets`` provider plugins, run directly rather than through its ``scan_line``, and
small named rules for what it lacks (newer provider keys, webhook and URL secrets, whole
private key blocks, card and id numbers, credentials stated in prose: "my bank PIN is 4921").
This module runs those rules and replaces what they find.

Invariants: the result is idempotent (placeholders are never matched or rewritten, and
passes repeat until nothing new is found); overlapping finds merge, so no secret is
half-replaced; the call never raises on any ``str`` and stays linear on hostile input; each
rule runs only when a cheap gate (a substring, a digit count) opens, so text with no
candidate costs microseconds. Rules are compiled regexes and pure functions, loaded once:
``redact`` is thread-safe and needs no detect-secrets settings context.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
from dataclasses import dataclass

from cranimem_mcp.secrets.rules import (
    ASSIGN_GATE,  # noqa: F401 (the gate-soundness test reads it here)
    Hit,
    Rule,
    detect_secrets_rules,
    own_rules,
)

logger = logging.getLogger(__name__)

__all__ = ["LABELS", "Redaction", "redact", "warm_up"]


@dataclass(frozen=True)
class Redaction:
    text: str  # the text with each credential replaced by a labelled placeholder
    found: tuple[str, ...]  # the labels of what was replaced, in text order; never the values


LABELS: tuple[str, ...] = (
    "2FA code", "access code", "Anthropic API key", "API key", "Artifactory token",
    "AWS access key", "AWS secret key", "Azure shared access key", "Azure storage key",
    "basic auth credentials", "bearer token", "card number", "card security code",
    "Cloudant credentials", "connection string password", "Discord bot token",
    "Discord webhook URL", "GitHub token", "GitLab token", "Google API key",
    "Google OAuth client secret", "Google OAuth token", "Groq API key", "Hugging Face token",
    "IBAN", "IBM Cloud IAM key", "IBM COS HMAC key", "JWT", "license key", "Mailchimp API key",
    "Microsoft Teams webhook URL", "npm token", "OpenAI API key", "passcode", "passport number",
    "password", "Perplexity API key", "PIN", "private key", "PyPI token", "recovery code",
    "recovery phrase", "Replicate API token", "secret", "SendGrid API key", "Slack token",
    "Slack webhook URL", "social security number", "SoftLayer API key", "Square OAuth secret",
    "Stripe key", "Stripe webhook secret", "Telegram bot token", "token", "Twilio key",
    "xAI API key", "Zapier webhook URL",
)  # fmt: skip

PLACEHOLDER_RE = re.compile(r"\[redacted [A-Za-z0-9 ]{1,40}\]")


# --- the guard ---------------------------------------------------------------------------------


@functools.cache
def _rules() -> tuple[Rule, ...]:
    from detect_secrets.__version__ import VERSION

    ds = detect_secrets_rules()
    rules = tuple(sorted(ds + own_rules(), key=lambda r: r.tier))
    logger.info("secrets guard: %d rules, %d from detect-secrets %s", len(rules), len(ds), VERSION)
    return rules


def warm_up() -> int:
    """Load the rules now (the first call imports detect-secrets, ~0.2 s) and return how many
    are active. Optional: ``redact`` loads them on first use."""
    return len(_rules())


_RARE = "_=/:"  # characters most prose lacks: gate words holding one are checked only if it occurs


@functools.cache
def _gate_words() -> tuple[tuple[tuple[str, frozenset[str]], ...], frozenset[str]]:
    """Every gate substring once. The lowercase ones, bucketed by the first rare character
    they hold ("" for none); and the ones with capitals, matched as written."""
    words = {g for rule in _rules() for g in rule.gate}
    lower = {g for g in words if g == g.lower()}
    buckets: dict[str, set[str]] = {}
    for g in lower:
        buckets.setdefault(next((c for c in _RARE if c in g), ""), set()).add(g)
    return tuple((k, frozenset(v)) for k, v in buckets.items()), frozenset(words - lower)


class _Gates:
    """What the gates look at, computed at most once per call: which gate substrings occur
    (each searched once, not once per rule), the digit count, each gate regex."""

    def __init__(self, text: str) -> None:
        self.text, self.lower = text, text.lower()
        buckets, raw_words = _gate_words()
        self._present = {g for g in raw_words if g in text}
        for key, words in buckets:
            if not key or key in self.lower:
                self._present.update(g for g in words if g in self.lower)
        self._digits = -1
        self._regex: dict[int, bool] = {}

    def open(self, rule: Rule) -> bool:
        if rule.gate and self._present.isdisjoint(rule.gate):
            return False
        if rule.min_digits:
            if self._digits < 0:
                self._digits = sum(map(self.text.count, "0123456789"))
            if self._digits < rule.min_digits:
                return False
        if rule.gate_re is None:
            return True
        if id(rule.gate_re) not in self._regex:
            self._regex[id(rule.gate_re)] = rule.gate_re.search(self.lower) is not None
        return self._regex[id(rule.gate_re)]


# A label set in Markdown emphasis or code: "**Password:** x", "**Password**: x", "`token`= x".
_MARKED_LABEL = re.compile(
    r"(?P<m>\*\*|__|\*|`)(?P<label>[A-Za-z][\w .\-]{0,40}?:?)(?:(?<=:)(?P=m)|(?P=m)(?=\s*[:=]))"
)


def _unmarked(text: str) -> str:
    """``text`` with the emphasis marks around a label blanked, so "**Password:** hunter2" is
    read as "  Password:   hunter2". Same length: every offset still points into ``text``."""
    if "*" not in text and "_" not in text and "`" not in text:
        return text
    return _MARKED_LABEL.sub(lambda m: " " * len(m["m"]) + m["label"] + " " * len(m["m"]), text)


def _candidates(text: str) -> list[tuple[int, int, int, str]]:
    """Every (tier, start, end, label) some rule proposes, before overlaps are resolved. The
    rules read the text with its Markdown label marks blanked (:func:`_unmarked`)."""
    text = _unmarked(text)
    gates = _Gates(text)
    aligned = len(gates.lower) == len(text)  # lower() can lengthen a few characters ("İ")
    found = []
    for rule in _rules():
        if not gates.open(rule):
            continue
        pattern, subject = rule.pattern, text
        if rule.on_lower:
            pattern, subject = (rule.pattern, gates.lower) if aligned else (rule.fallback, text)
        assert pattern is not None
        for m in pattern.finditer(subject):
            if (
                rule.word_start
                and m.start()
                and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")
            ):
                continue
            hit = rule.finder(m, text)
            if hit is not None and hit[1] > hit[0]:
                found.append((rule.tier, *hit))
    return found


class _Spans:
    """Disjoint spans sorted by start. Adding one that overlaps others merges them under the
    label that was added first (rules come in priority order); a span that touches a
    placeholder already in the text is dropped, so placeholders are never rewritten."""

    def __init__(self, existing: list[tuple[int, int]]) -> None:
        self._starts = [a for a, _ in existing]
        self._items: list[tuple[int, int, str | None, int]] = [
            (a, b, None, -1) for a, b in existing
        ]
        self._added = 0

    def add(self, start: int, end: int, label: str) -> None:
        i = bisect.bisect_right(self._starts, start)
        lo = i - 1 if i and self._items[i - 1][1] > start else i
        hi = lo
        while hi < len(self._items) and self._items[hi][0] < end:
            hi += 1
        overlapping = self._items[lo:hi]
        if any(label_ is None for _, _, label_, _ in overlapping):
            return
        order, self._added = self._added, self._added + 1
        if overlapping:
            first = min(overlapping, key=lambda item: item[3])
            start, end = min(start, overlapping[0][0]), max(end, overlapping[-1][1])
            label, order = first[2] or label, first[3]
        self._items[lo:hi] = [(start, end, label, order)]
        self._starts[lo:hi] = [start]

    def hits(self) -> list[Hit]:
        return [(a, b, label) for a, b, label, _ in self._items if label is not None]


def _choose(text: str) -> list[Hit]:
    """The spans to replace in one pass, disjoint and in text order."""
    candidates = _candidates(text)
    if not candidates:
        return []
    chosen = _Spans([m.span() for m in PLACEHOLDER_RE.finditer(text)])
    # Key blocks first, then provider formats, then the generic rules: the most specific
    # label wins. Overlapping candidates merge into one span (never a partial redaction).
    for _tier, start, end, label in sorted(candidates, key=lambda c: (c[0], c[1], -c[2])):
        chosen.add(*_whole_word(text, start, end), label)
    return chosen.hits()


def _whole_word(text: str, start: int, end: int) -> tuple[int, int]:
    """A span widened to the word it starts or ends inside: a rule that found the digits
    of "Qzvce655a3ae02746" must not leave "Qzvce" and "a3ae02" standing (most of the code)."""
    while start and _in_word(text[start - 1]) and _in_word(text[start]):
        start -= 1
    while end < len(text) and _in_word(text[end]) and _in_word(text[end - 1]):
        end += 1
    return start, end


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def redact(text: str) -> Redaction:
    """Replace each credential in ``text`` with ``[redacted <label>]``."""
    placed: list[tuple[int, str]] = []  # (position, label) of the placeholders put in so far
    # A replacement changes its neighbours' context ("KEY-001-01-0001": the dash that made
    # the number look like part of a longer one is gone), so passes repeat until nothing new
    # is found: that is what makes the result idempotent. Two passes suffice in practice.
    for _ in range(4):
        hits = _choose(text)
        if not hits:
            break
        parts, pos, shift, moved = [], 0, 0, []
        for start, end, label in hits:
            placeholder = f"[redacted {label}]"
            moved.append((start + shift, label))
            parts += [text[pos:start], placeholder]
            shift += len(placeholder) - (end - start)
            pos = end
        parts.append(text[pos:])
        # Earlier placeholders are never inside a new span: shift them past the new ones.
        starts = [start for start, _, _ in hits]
        deltas = [len(f"[redacted {label}]") - (end - start) for start, end, label in hits]
        placed = [(p + sum(deltas[: bisect.bisect_left(starts, p)]), label) for p, label in placed]
        placed = sorted(placed + moved)
        text = "".join(parts)
    found = tuple(label for _, label in placed)
    if found:
        logger.debug("redacted %d secret(s): %s", len(found), ", ".join(found))
    return Redaction(text, found)
