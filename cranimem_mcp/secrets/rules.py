"""The secrets guard's rule tables: what counts as a credential, and which part to replace.

A rule (``Rule``) is a compiled regex, a finder and a cheap gate. The finder
(:mod:`cranimem_mcp.secrets.finders`) is a pure function of the match and the original text
that returns the span to replace and its label (a webhook URL keeps its host, a connection
string keeps everything but the password), or ``None`` to skip a look-alike. ``redaction``
runs the rules: it opens the gates, merges overlapping finds under the most specific label
(the lowest ``tier``) and repeats passes until nothing new is found. This module only says
what to look for; it does not import ``redaction``.

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
from dataclasses import dataclass
from typing import Any

from cranimem_mcp.secrets.finders import (
    Finder,
    Hit,  # noqa: F401 (redaction reads it here)
    find_access_code,
    find_after,
    find_after_eq,
    find_assignment,
    find_auth_codes,
    find_authorization,
    find_aws_secret,
    find_card,
    find_exact,
    find_iban,
    find_jwt,
    find_npm_rc,
    find_number,
    find_private_key,
    find_prose_password,
    find_prose_token,
    find_slack_webhook,
    find_ssn,
    find_token,
    find_trimmed,
    find_url_password,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rule:
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
          digits: int = 0) -> Rule:  # fmt: skip
    """``lower``: the pattern is written in lowercase and matched on the lowercased text."""
    fallback = re.compile(pattern, re.IGNORECASE) if lower else None
    return Rule(re.compile(pattern), finder, tier, gate, digits, gate_re, lower, fallback, word)


def own_rules() -> list[Rule]:
    code_is = r"(?:\s*(?:is|was|is\s+now|:|=|-|#))?\s*"
    codes = _CODE + r"(?:(?:\s*[,;]\s*|\s+(?:and\s+)?)" + _CODE + r"){0,15}"
    return [
        _rule(0, r"-{2,5} ?BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?", find_private_key,
              ("PRIVATE KEY",)),
        # provider formats detect-secrets 1.5 lacks
        _rule(1, r"sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_\-]{20,}", find_token("Anthropic API key"),
              ("sk-ant-",)),
        _rule(1, r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", find_token("OpenAI API key"),
              ("sk-",)),
        _rule(1, r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]{48}(?![A-Za-z0-9])", find_token("OpenAI API key"),
              ("sk-",)),
        _rule(1, r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_\-]{32,}", find_token("API key"), ("sk-",)),
        _rule(1, r"AIza[0-9A-Za-z_\-]{35}", find_token("Google API key"), ("AIza",)),
        _rule(1, r"GOCSPX-[A-Za-z0-9_\-]{28}", find_token("Google OAuth client secret"),
              ("GOCSPX-",)),
        _rule(1, r"ya29\.[0-9A-Za-z_\-]{20,}", find_token("Google OAuth token"), ("ya29.",)),
        _rule(1, r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}", find_token("Hugging Face token"),
              ("hf_",)),
        _rule(1, r"github_pat_[A-Za-z0-9_]{22,}", find_token("GitHub token"), ("github_pat_",)),
        _rule(1, r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}", find_token("npm token"), ("npm_",)),
        _rule(1, r"[sr]k_(?:live|test)_[0-9a-zA-Z]{16,}", find_token("Stripe key"),
              ("k_live_", "k_test_")),
        _rule(1, r"whsec_[A-Za-z0-9]{24,}", find_token("Stripe webhook secret"), ("whsec_",)),
        _rule(1, r"xapp-[0-9]-[A-Za-z0-9-]{20,}", find_token("Slack token"), ("xapp-",)),
        _rule(1, r"(?<![A-Za-z0-9_])gsk_[A-Za-z0-9]{40,}", find_token("Groq API key"), ("gsk_",)),
        _rule(1, r"(?<![A-Za-z0-9_-])xai-[A-Za-z0-9]{60,}", find_token("xAI API key"), ("xai-",)),
        _rule(1, r"pplx-[A-Za-z0-9]{40,}", find_token("Perplexity API key"), ("pplx-",)),
        _rule(1, r"(?<![A-Za-z0-9_])r8_[A-Za-z0-9]{30,}", find_token("Replicate API token"),
              ("r8_",)),
        # webhook URLs: keep the host, replace the secret path
        _rule(1, r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/]{20,}",
              find_after(1, "Slack webhook URL"), ("hooks.slack.com",)),
        _rule(1, r"(https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/)[0-9]{5,}/"
                 r"[A-Za-z0-9_\-]{20,}", find_after(1, "Discord webhook URL"), ("discord",)),
        _rule(1, r"(https://[A-Za-z0-9.\-]*(?:webhook|outlook)\.office\.com/webhook(?:b2)?/)"
                 r"[A-Za-z0-9@/\-]{30,}", find_after(1, "Microsoft Teams webhook URL"),
              ("office.com/webhook",)),
        _rule(1, r"(https://hooks\.zapier\.com/hooks/catch/)[0-9]+/[A-Za-z0-9]+",
              find_after(1, "Zapier webhook URL"), ("hooks.zapier.com",)),
        # structural: URLs, headers, numbers
        _rule(2, r"[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@\[\]\"'<>]*:"
                 r"(?P<value>[^\s@/?#\"'<>]{1,256})@(?=[A-Za-z0-9\[._\-])",
              find_url_password("value"), ("://",)),
        _rule(2, r"(?:sharedaccesskey|accountkey)\s*=\s*[a-z0-9+/]{30,}={0,2}",
              find_after_eq("Azure shared access key"), ("accesskey", "accountkey"), lower=True),
        _rule(2, r"authorization[\"']?\s*[:=]\s*[\"']?(?:(?P<scheme>bearer|basic|token|bot|digest"
                 r"|apikey|key)\s+)?(?P<value>[a-z0-9_\-+/=.~:]{1,2048})",
              find_authorization, ("authorization",), lower=True),
        _rule(2, r"bearer\s+(?P<value>(?=[a-z0-9_\-+/=.~]*[0-9])[a-z0-9_\-+/=.~]{16,2048})",
              find_authorization, ("bearer",), lower=True, word=True),
        _rule(2, r"[?&;](?:sig|signature|key)=(?P<value>[A-Za-z0-9%_\-+/=.~]{16,})",
              find_exact("token", "value"), ("sig=", "signature=", "key=")),
        _rule(2, r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", find_aws_secret,
              ("aws", "AKIA", "ASIA")),
        # these open with a class, not a lookbehind, so the scan skips non-digits fast; the
        # finders check the boundaries
        _rule(2, r"[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{1,7}(?![0-9])"
                 r"|3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5}(?![0-9])", find_card,
              gate_re=_CARD_GATE, digits=13),
        _rule(2, r"[0-9]{3}-[0-9]{2}-[0-9]{4}", find_ssn, ("-",), gate_re=_SSN_GATE, digits=9),
        # an IBAN is looked for only near words that introduce one
        _rule(2, r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?", find_iban,
              _IBAN_WORDS, gate_re=_IBAN_GATE, digits=8),
        # keywords: assignments in config, env, JSON, query strings and command lines
        _rule(3, r"(?P<word>password|passwd|passphrase|passcode|pwd|pass|pw|(?:api|access|auth"
                 r"|private|secret|signing|encryption|master)[_.\-]?key|apikey|client[_.\-]?secret"
                 r"|secret|token)(?:[_.\-]?[0-9])?[\"']?\s*(?P<op>:=|=>|=|:)\s*" + _VALUE,
              find_assignment, ("pass", "pw", "secret", "token", "key"), lower=True),
        _rule(3, r"--(?P<word>password|passwd|pass|token|secret|api-key|apikey)(?P<op>[= ])\s*"
                 + _VALUE, find_assignment, ("--",), lower=True),
        # credentials stated in prose
        _rule(3, r"(?P<kw>pass(?:word|phrase|code)|passwd|wi-?fi\s+key|wpa2?\s+key|network\s+key)"
                 r"s?\b" + _MID + _CONN + _VALUE,
              find_prose_password, ("pass", "key"), lower=True, word=True),
        _rule(3, r"(?P<kw>key|secret|token)s?\b" + _MID + _CONN + _VALUE,
              find_prose_token, ("key", "secret", "token"), lower=True, word=True),
        _rule(3, r"(?:PIN|PUK)s?\b(?:\s*(?i:code|number|no\.?|#))?" + _MID
                 + r"(?:\s*(?i:is|was|is\s+now|:|=|-|#))?\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
              find_number("PIN"), ("PIN", "PUK"), word=True),
        _rule(3, r"pin(?:\s*(?:code|number))?" + _MID
                 + r"\s*(?:is|was|is\s+now|:|=)\s*(?P<value>[0-9]{4,12})" + _DIGITS_END,
              find_number("PIN"), ("pin",), lower=True, word=True),
        _rule(3, r"(?:code|combo|combination|pin)\b" + _MID + code_is
                 + r"(?P<value>[0-9][0-9#*\-]{2,11})(?![0-9])",
              find_access_code, ("code", "combo", "combination", "pin"), lower=True, word=True),
        _rule(3, r"combination" + _MID
                 + r"\s*(?:is|was|:|=)\s*(?P<value>[0-9]{1,3}(?:[-\s][0-9]{1,3}){2,4})(?![0-9])",
              find_exact("access code", "value"), ("combination",), lower=True, word=True),
        _rule(3, r"(?:codes?|keys?|pins?)\b" + _MID + r"(?:\s*(?:are|is|were|was|:|=|-))?\s*"
                 + r"(?P<value>" + codes + r")(?![a-z0-9])",
              find_auth_codes, ("code", "key", "pin"), lower=True, word=True),
        _rule(3, r"(?:seed|recovery|mnemonic|secret)\s+(?:phrase|words)\s*(?:is|are|:|=)\s*"
                 r"(?P<value>(?:[a-z]{3,8}\s+){11,23}[a-z]{3,8})\b",
              find_exact("recovery phrase", "value"), ("phrase", "words"), lower=True, word=True),
        _rule(3, r"(?:cvv2?|cvc2?)\b(?:\s*(?:code|number))?\s*(?:is|was|:|=|-)?\s*"
                 r"(?P<value>[0-9]{3,4})(?![0-9])",
              find_exact("card security code", "value"), ("cvv", "cvc"), lower=True, word=True),
        _rule(3, r"(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b\D{0,20}?"
                 r"(?P<value>[0-9]{3}[ .]?[0-9]{2}[ .]?[0-9]{4})(?![0-9])",
              find_exact("social security number", "value"), ("ssn", "social security"),
              lower=True, word=True),
        _rule(3, r"(?i:passport)\s*(?i:number|no\.?|#)?\s*(?i:is|was|:|=|-)?\s*"
                 r"(?P<value>(?=[A-Z]*[0-9])[A-Z0-9]{6,9})\b",
              find_exact("passport number", "value"), ("passport",), word=True),
    ]  # fmt: skip


_CARD_GATE = re.compile(r"[0-9]{4}[ -]?[0-9]{4}")
_SSN_GATE = re.compile(r"-[0-9]{2}-[0-9]")  # opens with a literal: found with a fast search
_IBAN_GATE = re.compile(r"[a-z]{2}[0-9]{2} ?[a-z0-9]{4} ?[a-z0-9]{4}")
_IBAN_WORDS = ("iban", "bank", "account", "acct", "sepa", "wire", "transfer", "konto", "swift",
               "bic", "pay", "rent", "salary", "invoice", "refund")  # fmt: skip


# --- detect-secrets' plugins -------------------------------------------------------------------

# Gates are sound: a pattern cannot match unless its gate opens. The slow keyword-assignment
# plugins (Cloudant, IBM, SoftLayer) all need a key word, an assignment and a 24+ char value.
ASSIGN_GATE = re.compile(
    r"(?:key|pwd|pw|password|pass|token)[\"']?\]? *(?:=|:|:=|=>| +|::) *[\"']?[a-z0-9_\-]{24}"
)
_ASSIGN = (("key", "pw", "pass", "token"), ASSIGN_GATE)
_JWT = re.compile(
    r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_=-]++\.[A-Za-z0-9_=-]++(?:\.[A-Za-z0-9_+/=-]*+)?"
)
_TELEGRAM_GATE = re.compile(r":[0-9a-z_-]{35}")  # opens with a literal: a fast search
_DISCORD_GATE = re.compile(r"\.[a-z0-9_-]{6}\.")


def detect_secrets_rules() -> list[Rule]:
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
        (private_key.PrivateKeyDetector(),
         [(find_private_key, ("PRIVATE KEY", "PuTTY-User-Key"))] * 8),
        (aws.AWSKeyDetector(), [(find_token("AWS access key"), aws_ids),
                                (find_exact("AWS secret key", 1), ("aws",))]),
        (azure_storage_key.AzureStorageKeyDetector(),
         [(find_after_eq("Azure storage key"), ("AccountKey=",))]),
        (github_token.GitHubTokenDetector(), [(find_token("GitHub token"), github)]),
        (gitlab_token.GitLabTokenDetector(), [(find_token("GitLab token"), g) for g in (
            gitlab, ("GR1348941",), ("glcbt-",), ("glimt-",), ("glptt-",), ("glagent-",),
            ("gloas-",))]),
        (openai.OpenAIDetector(), [(find_token("OpenAI API key"), ("T3BlbkFJ",))]),
        (slack.SlackDetector(), [(find_token("Slack token"), ("xox",)),
                                 (find_slack_webhook, ("hooks.slack.com",))]),
        (stripe.StripeDetector(), [(find_token("Stripe key"), ("k_live_",))]),
        (sendgrid.SendGridDetector(), [(find_token("SendGrid API key"), ("SG.",))]),
        (twilio.TwilioKeyDetector(), [(find_token("Twilio key"), ("AC",)),
                                      (find_token("Twilio key"), ("SK",))]),
        (telegram_token.TelegramBotTokenDetector(),
         [(find_token("Telegram bot token"), ((":",), _TELEGRAM_GATE))]),
        (discord.DiscordBotTokenDetector(),
         [(find_token("Discord bot token"), ((".",), _DISCORD_GATE))]),
        (pypi_token.PypiTokenDetector(), [(find_token("PyPI token"), ("pypi-",))] * 2),
        (npm.NpmDetector(), [(find_npm_rc, ("_authtoken",))]),
        (square_oauth.SquareOAuthDetector(), [(find_token("Square OAuth secret"), ("sq0csp-",))]),
        (mailchimp.MailchimpDetector(), [(find_token("Mailchimp API key"), ("-us",))]),
        (artifactory.ArtifactoryDetector(), [(find_trimmed("Artifactory token"), ("AKC",)),
                                             (find_trimmed("Artifactory token"), ("AP",))]),
        (basic_auth.BasicAuthDetector(), [(find_url_password(1), ("://",))]),
        (cloudant.CloudantDetector(), [(find_exact("Cloudant credentials", 1), _ASSIGN)] * 2
            + [(find_exact("Cloudant credentials", 1), ("cloudant.com",))] * 2),
        (ibm_cloud_iam.IbmCloudIamDetector(), [(find_exact("IBM Cloud IAM key", 1), _ASSIGN)]),
        (ibm_cos_hmac.IbmCosHmacDetector(), [(find_exact("IBM COS HMAC key", 1), _ASSIGN)]),
        (softlayer.SoftlayerDetector(), [(find_exact("SoftLayer API key", 1), _ASSIGN),
                                         (find_exact("SoftLayer API key", 1), ("softlayer.com",))]),
    ]  # fmt: skip
    # The JWT plugin's regex has no left boundary and backtracks: on a long base64 run it is
    # quadratic (~1 s on 30k characters). Its validator runs on a linear regex instead.
    rules = [Rule(_JWT, find_jwt(jwt.JwtTokenDetector.is_formally_valid), 1, ("eyJ",))]
    for plugin, per_pattern in table:
        patterns = list(plugin.denylist)
        if len(patterns) != len(per_pattern):
            # A detect-secrets release changed this plugin: use its patterns anyway, on whole
            # matches, ungated, and say so (tests pin the pattern counts).
            logger.warning(
                "detect-secrets %s has %d patterns, expected %d: redacting whole matches",
                type(plugin).__name__, len(patterns), len(per_pattern),
            )  # fmt: skip
            per_pattern = [(find_token(plugin.secret_type), ())] * len(patterns)
        tier = {private_key.PrivateKeyDetector: 0, basic_auth.BasicAuthDetector: 2}.get(
            type(plugin), 1
        )
        for pattern, (finder, gate) in zip(patterns, per_pattern, strict=True):
            words, gate_re = gate if gate and isinstance(gate[-1], re.Pattern) else (gate, None)
            if pattern.flags & re.IGNORECASE:
                # Every letter class in these patterns has both cases, so matching without
                # the flag on the lowercased text is the same match, ten times faster.
                plain = re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)
                rules.append(Rule(plain, finder, tier, words, 0, gate_re, True, pattern))
            else:
                rules.append(Rule(pattern, finder, tier, words, 0, gate_re))
    return rules
