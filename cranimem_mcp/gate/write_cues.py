"""The linguistic cues of a write, read from its text alone (the default gate's features).

Regular expressions over the first 400 characters after a transcript's turn label: who the
sentence is about (first person, "User ...", a named person's possessive, no subject at
all), rules for the assistant, team conventions, schedules, health and safety; against
pleasantries, the assistant's own narration, tool output, transient status, one-off
requests and generic statements. :func:`cues` gives them as numbers in about [0, 1], in the
order of :data:`CUES` (the order the classifier's weights were trained in: a new cue means
retraining). :func:`about_health` is the one cue the gate obeys by itself: a health or
safety fact about a person is never rejected.
"""

from __future__ import annotations

import math
import re

import numpy as np

_I = re.I


def _words(*alternatives: str) -> str:
    return r"(?:" + "|".join(alternatives) + r")"


_FIRST_PERSON_START = re.compile(r"^\W*(i|i'm|i’m|i've|i'd|i'll|my|we|we're|we've|our|me)\b", _I)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i’m|i've|i'd|me|my|mine|myself|we|we're|our|ours|us)\b", _I)
_USER = re.compile(r"\b(the user|user|user's|user’s|users')\b", _I)
_YOU = re.compile(r"\b(you|you're|you'll|you've|yourself)\b", _I)
_YOUR = re.compile(r"\byour\b", _I)
_DIRECTIVE_START = re.compile(
    r"^\W*(always|never|don'?t|do not|please (always|never|don'?t|do not|use|keep|avoid|stop)|"
    r"no |avoid|only|make sure|remember (that|to)|call me|stop|keep|prefer|default to|"
    r"from now on|when(ever)? (i|you|the user|writing|replying)|if (i|the user) )",
    _I,
)
_HABITUAL = re.compile(
    r"\b(always|never|every|each|whenever|usually|often|generally|typically|normally|"
    r"all (my|our|the)|any|by default|from now on|anymore|no longer|weekly|daily|monthly|"
    r"yearly|annually|on (mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
    r"weekends|weekdays))\b",
    _I,
)
_NOW = re.compile(
    r"\b(now|right now|just now|today|tonight|tomorrow|yesterday|this (morning|afternoon|"
    r"evening|week)|at the moment|currently|for now|soon|in a (bit|minute|moment|sec|second)|"
    r"later today|so far|still|almost|halfway|brb|one moment|be right back)\b",
    _I,
)
_THIS = re.compile(
    r"\b(this|these|that|those) (answer|reply|response|email|message|text|file|code|function|"
    r"paragraph|sentence|document|doc|page|article|list|draft|version|time|one|bug|error|"
    r"issue|question|table|query|script|test|pr|diff|output|line|section|essay|letter|post|"
    r"thread|chat|conversation|session|image|photo|link|recipe)\b",
    _I,
)
_NARRATION_START = re.compile(
    r"^\W*(let me|let's|i'll|i will|i'm going to|i am going to|i'm now|now i|next,? i|"
    r"first,? i|then i|below is|below are|here is|here's|here are|done|all done|"
    r"okay,? (now|let|so)|ok,? (now|let|so)|now,? (let|i)|looks like|it looks like|"
    r"it seems|seems like|great,? (now|let)|alright,? (now|let)|i'm (checking|looking|reading|"
    r"searching|running|putting|drafting|writing|opening|fetching|pulling|trying|working)|"
    r"(checking|looking|reading|searching|running|opening|fetching|loading|compiling|"
    r"installing|building|deploying|pulling|pushing|updating|generating|analy[sz]ing))\b",
    _I,
)
_DID = re.compile(
    r"\bi(?:'ve| have)? (?:just |now |also )?(added|created|updated|searched|found|drafted|"
    r"put|scheduled|booked|sent|fixed|written|wrote|ran|run|checked|reviewed|refactored|"
    r"renamed|removed|deleted|changed|applied|pushed|committed|opened|read|looked|made|"
    r"couldn't|could not|wasn't able|tried|compiled|generated|summari[sz]ed|translated|"
    r"rewrote|rewritten|edited|replaced|set up|configured|installed)\b",
    _I,
)
_REQUEST_START = re.compile(
    r"^\W*(can you|could you|would you|will you|can we|could we|please|pls|"
    r"write|draft|suggest|make|help( me)?|give me|look up|find|search|summari[sz]e|"
    r"translate|explain|show( me)?|tell me|list|convert|generate|rewrite|fix|check|review|"
    r"compose|create|book|send|calculate|compare|proofread|edit|format|shorten|expand|"
    r"describe|recommend|leave|skip|add|remove|delete|rename|open|run|try|go ahead|"
    r"what|how|why|where|who|which|when|is there|are there|do you|does|is it|should i)\b",
    _I,
)
_HEALTH = re.compile(
    r"\b(allerg\w*|anaphyla\w*|epi-?pen|asthma\w*|diabet\w*|insulin|medicat\w*|meds|"
    r"\d+\s?mg|prescri\w*|diagnos\w*|migraine\w*|epilep\w*|seizure\w*|celiac|coeliac|"
    r"gluten|lactose|intoleran\w*|vegetarian|vegan|halal|kosher|pregnan\w*|"
    r"blood pressure|hypertension|wheelchair|deaf|hard of hearing|hearing aid|blind|"
    r"low vision|inhaler|dose|dosage|pills?|tablets?|therapy|therapist|adhd|autis\w*|"
    r"surgery|chemo\w*|cancer|arthritis|pacemaker|heart condition|kidney|liver|"
    r"dyslexi\w*|anxiety|depression|bipolar|ptsd|sober|sobriety|alcohol|nuts?|peanuts?|"
    r"shellfish|penicillin|ibuprofen|aspirin|antibiotic\w*|vaccin\w*|blood type|"
    r"mobility|cane|crutches|dietary|sodium|sugar-free|dairy|eggs?|sesame|soy|"
    r"metformin|warfarin|statin\w*|thyroid|hiv|hepatitis|cholesterol|injur\w*)\b",
    _I,
)
_PERSON_REF = re.compile(
    r"\b(his|her|hers|their|wife|husband|partner|spouse|son|daughter|kids?|child|children|"
    r"baby|mother|mom|mum|father|dad|parents?|sister|brother|siblings?|grand\w+|aunt|uncle|"
    r"cousin|niece|nephew|friend|boyfriend|girlfriend|fianc[ée]e?|roommate|flatmate|"
    r"manager|boss|colleague|coworker|co-worker|teammate|client|landlord|neighbou?r|"
    r"doctor|dentist|cat|dog|puppy|kitten|pet|horse|parrot|rabbit|hamster)\b",
    _I,
)
_NAMED_POSSESSIVE = re.compile(r"\b[A-Z][a-z]+(?:'s|’s)\b")
_SUBJECTLESS_START = re.compile(
    r"^\W*(?:(?:[A-Z][a-z]+s)\s+(?!are\b|were\b|is\b|was\b|can\b|have\b|had\b|will\b|do\b|"
    r"did\b|should\b|must\b|may\b|might\b|of\b|and\b|in\b)\w|"
    r"(?:allergic|intolerant|vegetarian|vegan|pescatarian|left-handed|right-handed|"
    r"originally|born|married|divorced|single|widowed|retired|based|fluent|colou?rblind|"
    r"diabetic|asthmatic|epileptic|pregnant|deaf|blind|lactose|coeliac|celiac|type [12]|"
    r"no longer|doesn't|does not|can't|cannot|won't|never|hates|loves|likes|prefers|"
    r"currently (lives|works|studies|uses))\b)",
)
_RULE_MODAL = re.compile(
    r"\b(must|mustn't|must not|should|shouldn't|need to|needs to|has to|have to|required|"
    r"requires?|only|not allowed|never|always|no one|nobody|before|unless|otherwise)\b",
    _I,
)
_TEAM = re.compile(
    r"\b(our|team|repo|repository|codebase|monorepo|project|company|staging|production|prod|"
    r"ci|cd|pipeline|deploys?|deployment|branch|branches|main|merge|merges|pull requests?|"
    r"prs?|code review|reviewers?|on-?call|releases?|sprint|standup|stand-up|backlog|"
    r"changelog|migrations?|database|schema|api|service|lint|linter|style guide|tickets?|"
    r"jira|linear|slack channel|clients?|customers?|office|shift|department|clinic|ward|"
    r"store|shop|classroom|school|farm|firm)\b",
    _I,
)
_SCHEDULE = re.compile(
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mondays|tuesdays|"
    r"wednesdays|thursdays|fridays|saturdays|sundays|weekends?|weekdays|january|february|"
    r"march|april|may|june|july|august|september|october|november|december|jan|feb|mar|"
    r"apr|jun|jul|aug|sep|sept|oct|nov|dec|\d{1,2}(:\d{2})?\s?(am|pm)|noon|midnight|"
    r"birthday|anniversary|appointment|every|weekly|monthly|biweekly|deadline|due)\b",
    _I,
)
_GENERIC_COPULA = re.compile(
    r"^\W*(?:the |an? )?[A-Za-z][\w\-]*(?: [A-Za-z][\w\-]*){0,3} "
    r"(is|are|was|were|has been|have been|can be|became|remains|contains|consists)\b",
    _I,
)
_TRANSIENT_STATE = re.compile(
    r"^\W*(i'm|i am|i’m|we're|we are|user is|the user is|currently|still|just)\s+(in|on|at|"
    r"about to|heading|off to|out|just|still|currently|halfway|almost|going|leaving|back|"
    r"stuck|waiting|busy|tired|exhausted|running late|stepping|looking|reading|working on|"
    r"debugging|trying|getting|having|finishing|starting|done|finished|away)\b|"
    r"\bfor the next \d+|\bin (\d+|a few|ten|five|twenty|thirty) (min|minutes|hours|secs?)\b",
    _I,
)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-2][0-9])\b")
_PLEASANTRY = re.compile(
    r"^\W*(thanks|thank you|thx|ty|great|sure|ok|okay|k|got it|sounds good|perfect|awesome|"
    r"cool|nice|hi|hello|hey|no problem|no worries|you're welcome|happy to help|glad|"
    r"of course|absolutely|will do|noted|good (question|point|morning|night|catch)|yes|yep|"
    r"yeah|no|nope|lol|haha|wow|alright|right|understood|makes sense|fair enough|bye|"
    r"hmm+|ah|oh|oops|sorry|my bad|cheers|brilliant|excellent|amazing|love it|that's|"
    r"that is|exactly|indeed|agreed|totally|definitely|ha|heh|np|nvm|welcome)\b",
    _I,
)
_TOOL_OUTPUT = re.compile(
    r"(traceback|exception|error:|warning:|^\s*\$ |>>>|\bexit (code|status)\b|"
    r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}|\bhttp/\d|\b(passed|failed|skipped)\b.*\d|"
    r"^\s*[\[{]|\b(stdout|stderr|npm err|at line \d+)\b|\w+\.\w{2,4}:\d+|"
    r"^\s*[\w.-]+/[\w./-]+|\b\d+ (rows?|files?|tests?|errors?|warnings?)\b|"
    r"^[A-Z_]{3,}\s{2,}|\s{3,}\S+\s{3,})",
    _I | re.M,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
# A chat transcript's turn label ("[9:12 am on 3 June, 2025] Noor: ...", "[2024-03-04]
# Me: ..."): the cues read what follows it, as the sentence starts there. A bare "Name:"
# is not stripped: "Partner: Sam (they/them)." is a note, not a turn.
_TURN_LABEL = re.compile(
    r"^\s*\[[^\]\n]{1,60}\]\s*(?:[A-Z][\w.'’-]{0,20}(?: [A-Z][\w.'’-]{0,20})?:\s+)?"
)
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")

CUES = (
    "first_person_start",
    "first_person",
    "user",
    "you",
    "your",
    "directive_start",
    "habitual",
    "now",
    "this",
    "narration_start",
    "did",
    "request_start",
    "question",
    "health",
    "person_ref",
    "named_possessive",
    "subjectless_start",
    "rule_modal",
    "team",
    "schedule",
    "generic_copula",
    "year",
    "pleasantry",
    "exclamation",
    "colon_end",
    "tool_output",
    "anchored",
    "transient_state",
    "unanchored",
    "one_off",
    "assistant_voice",
    "generic_statement",
    "short_pleasantry",
    "lines",
    "symbols",
    "digits",
    "words",
    "capitalised",
)


def cues(text: str) -> np.ndarray:
    """The linguistic cues of a write, as numbers in about [0, 1] (see :data:`CUES`)."""
    t = _TURN_LABEL.sub("", text.strip(), count=1) or text.strip()
    head = t[:400]
    n = max(1, len(t))
    words = _WORD.findall(t)
    symbols = sum(1 for c in t if not (c.isalnum() or c.isspace() or c in ".,'’-!?"))
    digits = sum(c.isdigit() for c in t)
    first_person = bool(_FIRST_PERSON.search(head))
    user = bool(_USER.search(head))
    person = bool(_PERSON_REF.search(head))
    named = bool(_NAMED_POSSESSIVE.search(head))
    subjectless = bool(_SUBJECTLESS_START.search(head))
    team = bool(_TEAM.search(head))
    directive = bool(_DIRECTIVE_START.search(head))
    habitual = bool(_HABITUAL.search(head)) or bool(re.search(r"\ball \w+s\b", head, _I))
    modal = bool(_RULE_MODAL.search(head))
    request = bool(_REQUEST_START.search(head))
    narrating = bool(_NARRATION_START.search(head)) or bool(_DID.search(head))
    addressed = bool(_YOUR.search(head) or _YOU.search(head))
    anchored = first_person or user or person or named or subjectless
    generic = bool(_GENERIC_COPULA.search(head))
    pleasantry = bool(_PLEASANTRY.search(head))
    values = (
        bool(_FIRST_PERSON_START.search(head)),
        first_person,
        user,
        bool(_YOU.search(head)),
        bool(_YOUR.search(head)),
        directive,
        habitual,
        bool(_NOW.search(head)),
        bool(_THIS.search(head)),
        bool(_NARRATION_START.search(head)),
        bool(_DID.search(head)),
        bool(_REQUEST_START.search(head)),
        "?" in t[-3:],
        bool(_HEALTH.search(head)),
        person,
        named,
        subjectless,
        modal,
        team,
        bool(_SCHEDULE.search(head)),
        generic,
        bool(_YEAR.search(head)),
        pleasantry,
        "!" in t,
        t.endswith(":"),
        bool(_TOOL_OUTPUT.search(t[:2000])),
        anchored,
        bool(_TRANSIENT_STATE.search(head)),
        not (anchored or team or directive),
        request and not (habitual or modal),
        narrating and addressed,
        generic and not (anchored or team),
        pleasantry and len(words) <= 6,
        min(1.0, t.count("\n") / 5),
        min(1.0, 5 * symbols / n),
        min(1.0, 5 * digits / n),
        min(1.0, math.log1p(len(words)) / math.log1p(60)),
        min(1.0, len(_CAPITALISED.findall(head)) / 4),
    )
    return np.asarray(values, dtype=np.float32)


_HEALTH_SUBJECTLESS = re.compile(
    r"^\W*(allergic|intolerant|diabetic|asthmatic|epileptic|vegetarian|vegan|pregnant|"
    r"deaf|blind|coeliac|celiac|lactose|type [12]|takes|uses an?|on \w+|has (a |an )?"
    r"(severe |mild )?\w*\s?(allergy|asthma|diabetes|condition)|needs|"
    r"can't (eat|have|take|drink)|cannot (eat|have|take|drink)|"
    r"no (nuts|dairy|gluten|pork|meat|alcohol|shellfish))\b",
    _I,
)


def about_health(text: str) -> bool:
    """A health or safety fact about a person (the user, their people): never rejected.
    World knowledge about a drug or a condition ("Metformin is a first-line medication",
    "Coeliac disease is an autoimmune reaction") is about no one: it needs a personal
    reference, a named person's possessive or condition, or a subjectless note ("Allergic to
    penicillin.") that is not a general statement."""
    head = (_TURN_LABEL.sub("", text.strip(), count=1) or text.strip())[:400]
    if not _HEALTH.search(head):
        return False
    if (
        _FIRST_PERSON.search(head)
        or _USER.search(head)
        or _PERSON_REF.search(head)
        or _NAMED_POSSESSIVE.search(head)
        or _NAMED_CONDITION.search(head)
    ):
        return True
    return bool(_HEALTH_SUBJECTLESS.search(head)) and not _GENERIC_COPULA.search(head)


_NAMED_CONDITION = re.compile(
    r"\b[A-Z][a-z]+ (has|takes|needs|uses|can't|cannot|is (allergic|intolerant|diabetic|"
    r"asthmatic|epileptic|on|vegan|vegetarian|pregnant|deaf|blind))\b"
)
