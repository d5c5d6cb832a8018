"""What the default gate rejects: writes that are certainly noise, each by a rule a person
can read.

The gate keeps noise out; the buffer's bound and replay decide what lasts (paper B.1-B.3).
A doubtful write kept at low utility costs a buffer slot until replay prunes it to the
restorable trash; a wrong rejection costs the memory, and the agent may never retry. So the
default gate rejects only what one of these rules recognises, and everything else is kept
(its utility says how durable it looks: :mod:`.judgment`).

The rules, each a whole-text judgement (a greeting followed by a fact is a fact):

- **empty**: no letter or digit at all;
- **pleasantry**: nothing but greetings, thanks, acknowledgements and farewells ("Thanks,
  that makes sense!", "Hello Nova!");
- **question**: one question and nothing else ("Where do I live?", "How do I stop a
  container?"): it asks, it states nothing;
- **request**: a one-off request to the assistant ("Tell me a joke.", "Can you help me write
  a function?"); not one for every time ("Find the cheapest option when I ask for
  flights.") or about a kind of thing ("Explain code changes with a short diff summary."):
  those are standing instructions;
- **narration**: the assistant narrating its own work ("Let me check the logs.", "Scanning
  the repo for uses of the old API."); not what a look found, said after it ("I checked the
  config: the timeout is 30 seconds.");
- **status**: a status of the moment, the user's or a tool's ("I just woke up", "The tests
  are still running on CI.", "In a meeting, back in 20.");
- **tool output**: lines a command printed (a directory listing, a log, grep hits, a
  traceback);
- **interaction note**: a note about the exchange itself, not about anyone ("User greeted",
  "User asked about current activity", "User's favorite color is unknown");
- **vague**: a few words that name nothing in particular, whatever label or tag they carry
  ("[decision] Made some changes", "[idea] Security is important", "We use a database"):
  no name, number or specific word, only words any note could hold.

A text that says it should last ("always", "never", "from now on", "remember", "remind me",
"prefer", a birthday, an allergy...) is never rejected, whatever rule would fire.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Noise:
    rule: str  # the rule's name, e.g. "pleasantry"
    why: str  # what the rule saw, in words a person reads ("a greeting or thanks")


# A stamp and a speaker or label before what is said ("[8 May] Ann: ", "user: ").
_SAID = re.compile(
    r"^(?:\[[^\]\n]{1,80}\]\s*)?(?:[A-Za-z][\w'’.-]{0,30}(?: [A-Za-z][\w'’.-]{0,30})?:\s+)?"
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Words that say a text is meant to last: no rule rejects a text holding one.
_DURABLE = re.compile(
    r"\b(?:always|never|from now on|going forward|in future|in the future|whenever|"
    r"every (?:time|day|week|month|morning|evening|night)|each time|by default|"
    r"remember|remind|don'?t forget|prefer|preferred|favou?rite is|call me|allerg|"
    r"birthday|anniversary|diagnos|medication|my name is|i am called|i'm called)\b",
    re.IGNORECASE,
)

_PLEASANT = frozenset(
    """hi hello hey hiya howdy yo greetings morning afternoon evening night good day
    thanks thank thx ty cheers appreciate appreciated much very so a lot lots again all
    you your you're youre welcome np no problem worries ok okay k kk sure yes yeah yep yup
    no nope nah alright right fine great cool nice perfect awesome amazing excellent
    fantastic wonderful brilliant lovely neat sweet super got it gotcha understood noted
    will do sounds makes sense that this is was looks seems helpful useful clear true
    exactly indeed agreed absolutely definitely totally of course haha hahaha lol lmao wow
    oh ah hmm well and for the help explaining explanation answer bye goodbye see later
    soon take care have fun talk to ttyl gracias muy útil util merci beaucoup danke schön
    schon vielen dank obrigado obrigada grazie mille arigato there everyone guys team folks
    how are doing it's its going been what's up sup good to great to nice to meet glad
    sorry apologies confusion earlier interesting moving on fair enough ha happy help with
    thing point hadn't thought of way huge today hope weekend let me know if there's
    anything else can i do mate total totally needed what just question next that's at
    you've a an really
    aww awww congratulations congrats proud same agree adorable beautiful classic typo go
    ahead lifesaver omg honestly wait hilarious incredible luck ooh oops ahh ta whoa ouch yum
    yay impressive exciting excited relief goodness deserved deserve brave smart fancy
    admirable thoughtful sweet cute love best hehe heh yikes oof phew hugs hug cheering
    rooting congratulate sounds like fun lucky glad hear news well done patience late reply
    kind wise wonderful hmm hmmm think mull over hold on thought not yet don't know maybe
    something check sec quick about""".split()
)
# Set phrases of praise, thanks and parting whose words alone are no pleasantry ("nice one",
# "that worked perfectly", "bye for now", "happy new year"): taken out before the words are read.
_PLEASANT_PHRASE = re.compile(
    r"\b(?:(?:nice|good|great|awesome|brilliant) (?:one|work|job|catch|stuff)|that (?:worked|"
    r"works)(?: (?:perfectly|great|fine|well|now|like a charm))?|worked perfectly|"
    r"(?:bye|that's all) for now|happy new year|merry christmas|(?:you(?:'re| are) )?too kind|"
    r"you crack me up|you win|that was (?:fast|quick)|i agree(?: 100 ?%)?|100 ?%)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))[\s,]+[A-Z][\w'’-]*[\s!.]*$",
    re.IGNORECASE,
)
# A question with no statement before it; "remember" and "remind" are caught by _DURABLE.
_QUESTION_START = re.compile(
    r"^(?:what|what's|whats|where|where's|when|who|who's|whom|whose|which|why|how|is|are|"
    r"am|was|were|do|does|did|can|could|would|should|will|shall|have|has|may|might|"
    r"any|got any)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:(?:please|pls|quickly|hey|ok|okay|so)[,!]?\s+)*"
    r"(?:(?:can|could|would|will) you(?: please)?\s+)?"
    r"(?:tell me|show me|send me|give me|find me|get me|help me|write me|make me|"
    r"find|list|translate|summari[sz]e|rephrase|reword|proofread|tally|calculate|compute|"
    r"convert|draft|generate|brainstorm|suggest|recommend|look up|search for|book (?:a|an|me)|"
    r"write (?:a|an|me)|explain|rename|make this|make it)\b",
    re.IGNORECASE,
)
# A request about a kind of thing rather than a thing at hand is a standing instruction:
# "Explain code changes with a short diff summary.", "Summarize long threads as bullet
# points.", "Write commit messages in the imperative mood." - the verb's object a bare plural
# (no article, number, "this" or "me"), then how to do it. "Explain the difference ...",
# "Find me a flight ...", "Give me three name ideas ..." stay one-off requests.
_STANDING = re.compile(
    r"^(?:please\s+)?(?:explain|summari[sz]e|translate|list|suggest|recommend|write|draft|"
    r"generate|convert|rephrase|reword|proofread)\s+"
    r"(?!(?:a|an|the|this|that|these|those|my|our|your|his|her|their|its|me|us|it|them|some|"
    r"any|one|two|three|four|five|how|what|why|when|where|who|which|whether|if)\b)"
    r"(?:[\w-]+\s+){0,2}[\w-]*[a-z]s\s+"
    r"(?:with|as|in|into|using|first|inline|at the (?:end|top)|before|after|by default|when|"
    r"whenever|without)\b",
    re.IGNORECASE,
)
# An instruction for this once ("Use bullet points for this answer.", "Leave the appendix out
# this time."): an imperative with a marker of the one occasion.
_ONCE = re.compile(
    r"^(?:please\s+)?(?:use|leave|skip|drop|keep|make|do|don't|answer|reply|format|put|add|"
    r"remove|send|show|give)\b.*\b(?:for this (?:answer|email|one|reply|message)|this time|"
    r"for now|today's)\b",
    re.IGNORECASE,
)
# Only the assistant's own work: what it checks, reads and writes for the user, with the
# artefact named ("Let me check the logs.", "I'll start by reading the README"); a plan of the
# user's ("I'll start a new job in March", "I'm going to run a marathon") is not narration.
_NARRATION = re.compile(
    r"^(?:(?:ok|okay|sure|alright|great|right|now|next|first|then)[,!.]?\s+)*"
    r"(?:let me (?:check|look|search|see|find|pull|fetch|run|read|open|think|verify|try|"
    r"start|take a look|scan|grab|summari[sz]e|draft|write|double-check|go through|dig)|"
    r"i'?ll (?:start|begin) by\b|i'?ll (?:now|first|next|go ahead and)\b|"
    r"i'?ll (?:take a look|look (?:at|into|up|through)|check (?:the|your|whether|if)|"
    r"search (?:the|your|for)|run the|read (?:the|your|through)|open the|pull (?:the|up)|"
    r"fetch the|scan the)\b|i will (?:now|first|start by)\b|"
    r"i'?ll (?:condense|double-check|paste|rewrite|summari[sz]e|refactor)\b|"
    r"i'?ve (?:just )?(?:shared|summari[sz]ed|drafted|compiled|scanned|fetched)\b|"
    r"i'?ve (?:just )?(?:checked|searched|looked (?:at|into|up|through)|gone through|reviewed|"
    r"pulled|created|updated|added|written|put together) (?:the|your|a (?:list|summary|draft|"
    r"table|report|few|short))\b|"
    r"i (?:just )?(?:checked|searched|looked up|looked through|scanned|reviewed) (?:your|the)\b|"
    r"i'?m (?:now )?(?:putting together|pulling|looking up|looking into|searching|scanning|"
    r"checking|fetching|compiling|drafting) (?:the|your|a|an|for|through|up)\b|"
    r"(?:scanning|fetching|pulling|analy[sz]ing|compiling) (?:the|your|for|through|up)\b|"
    r"(?:now )?i'?m (?:now )?going to (?:split|draft|refactor|check|look (?:at|into)|search|fix|"
    r"update|rewrite|condense|paste|flag|summari[sz]e|go through) (?:the|this|that|your|it)\b|"
    # a next step of the work at hand ("Next, I'll add the missing null check", "Let me
    # quickly verify the conversion"); not "let me know / tell you / share ..."
    r"(?:next|now|then)[,!.]?\s+i'?ll (?:add|rerun|re-run|run the tests|check|look|search|read|"
    r"fix|refactor|update|write the tests|draft|summari[sz]e)\b|"
    r"let me (?:quickly |just |first |now )?(?:verify|rerun|re-run|test|compare|reproduce|debug|"
    r"inspect|grep|profile|benchmark|rewrite|refactor|fix|update|tidy|reformat|clean up|"
    r"calculate|convert|translate|look up|dig into)\b|"
    r"(?:now )?i'?m (?:now )?going to (?:rerun|re-run|reproduce|debug|lint|reformat|test) "
    r"(?:the|this|that|these|your|it|them)\b|"
    r"i'?ll stop here\b)",
    re.IGNORECASE,
)
# The assistant reporting what it did for the user: "I've" (or "Done:"), a past action, and
# the user addressed ("your", "you asked", "for you", "above", "below", "as requested").
_REPORT = re.compile(
    r"^(?:done[:,—-]?\s*)?(?:i'?ve |i have )(?:just |now |also |went ahead and )?"
    r"(?:\w+ed|ran|built|sent|rewrote|rewritten|made|found|put|wrote|written|set|read)\b"
    r".*\b(?:your|you asked|you'd|for you|above|below|as requested|you wanted)\b",
    re.IGNORECASE,
)
# The assistant's work for the user, in the plain past, with the user addressed: "I reformatted
# your bibliography into APA style.", "I generated a chart ... and attached it above." (the
# user's own work names no "your": "I rewrote the billing service in Go." is kept).
_DID_FOR_YOU = re.compile(
    r"^(?:okay!?,?\s+|ok,?\s+|sure,?\s+|done[:,—-]?\s*)?i (?:just |also |went ahead and )?"
    r"(?:reformatted|rewrote|fixed|drafted|generated|converted|highlighted|suggested|"
    r"summari[sz]ed|translated|removed|edited|merged|cancell?ed|attached|cleaned up|corrected|"
    r"shortened|reorgani[sz]ed|reordered|tidied|compiled|listed|pulled out|went through|"
    r"formatted|simplified|renamed|moved|added|updated|condensed|proofread|sorted)\b"
    r".*\b(?:your|for you|above|below|as requested|you asked|you mentioned|you wanted|you'd)\b",
    re.IGNORECASE,
)
# What is the speaker's own ("Let me summarize my situation: ...", "I went through your
# checklist and my passport expires in May"): said of themselves, not the assistant's work.
_MINE = re.compile(r"\b(?:my|our|mine|ours)\b", re.IGNORECASE)
_STATUS = re.compile(
    r"\b(?:is|are) still (?:running|in progress|pending|queued|building|deploying|loading|"
    r"compiling|uploading|downloading|going|waiting)\b|"
    r"\b(?:is|are) currently (?:in progress|pending|queued|deploying|building|loading|"
    r"compiling|uploading|downloading|broken)\b|"
    r"\b(?:is|are) in progress\b|"
    r"^i'?m (?:on the (?:train|bus|plane|subway|tube|phone)|in the (?:car|shower)|"
    r"in the middle of (?:a|the) (?:rebase|merge|build|deploy|call|meeting)|in a meeting)\b|"
    r"^(?:in a meeting|brb|afk|be right back|back in \d+)\b|"
    r"\bback in \d+\s*(?:min|minutes|mins)?[.!]*$|"
    r"^i (?:just )?(?:woke up|got up|got home|got in)[.!]*$|"
    r"^i'?m (?:\w+ing) (?:this|it|that) (?:now|right now)\b|"
    r"^(?:still|currently) (?:waiting|going|running|reviewing|downloading|uploading|working|"
    r"debugging|building|deploying)\b|\bgive me a (?:sec|second|minute)\b|"
    r"\b(?:as we speak|one moment|for a sec)\b|"
    r"^(?:i'?m|i am) (?:still |currently )?(?:waiting for|running late|logged in|in the queue|"
    r"hungry|tired|a bit tired|a little confused|feeling a bit|pretty wiped)\b",
    re.IGNORECASE,
)
# Words that tie a status to this moment: "The server is down right now", "eating lunch atm".
_MOMENT = re.compile(
    r"\b(?:right now|at the moment|atm|rn|as we speak|at present|for a sec|one sec)\b",
    re.IGNORECASE,
)
# Verbs of a state that lasts beyond the moment it is said in: "I live in Berlin at the
# moment" is where the user lives.
_LASTING = re.compile(
    r"\b(?:live|lives|living|work|works|study|studies|studying|based|stay|staying|dating|"
    r"married|engaged|pregnant|own|owns|have|has|use|uses|using|my \w+ is)\b",
    re.IGNORECASE,
)
# How one feels this moment, and nothing else: "im so tired today", "Feeling a bit meh".
_MOOD = re.compile(
    r"^(?:(?:ugh|lol|hmm|phew|eh|ahh|ok|yawn|honestly|so)[,!.]?\s+)*(?:i'?m |i am |im |feeling |"
    r"still |just )?(?:so |really |a bit |kinda |kind of |a little |just |honestly |pretty |"
    r"totally |half )*(?:tired|sleepy|bored|hungry|starving|exhausted|knackered|distracted|"
    r"grumpy|stressed|full|sluggish|lazy|meh|asleep|wiped|fried|overwhelmed|tipsy|cold|"
    r"hot|awake|waking up)\b(?:[\s,]*(?:today|tonight|this (?:morning|afternoon|evening)|"
    r"right now|now|already|again|lol|haha|honestly|ugh|though|that's all|long day|sorry))*"
    r"[\s.!?]*$",
    re.IGNORECASE,
)
# Words that limit a request to this once: "just this once", "for this reply only".
_THIS_ONCE = re.compile(
    r"\b(?:just this once|this one time|(?:only |just )?for this (?:reply|answer|one|chat|"
    r"conversation|email|message|draft|report|assignment|commit message|response|session)"
    r"(?: only)?|in this (?:reply|answer|response|message))\b",
    re.IGNORECASE,
)
# A device's or a job's state this moment: "My laptop battery is at 8%", "The deploy is at
# 60%", "the wifi keeps dropping".
_GAUGE = re.compile(
    r"\b(?:battery(?:'s| is)|phone(?:'s| is)) (?:at \d+ ?%|about to die|dying)|"
    r"\b(?:deploy|deployment|download|upload|build|install|migration|sync|backup|export|"
    r"import|disk usage|cpu|queue)\b[^.]{0,30}\b(?:is|'s) (?:at \d+ ?%|about halfway(?: done)?|"
    r"halfway (?:done|through))|"
    r"\bkeeps? (?:dropping|cutting out|freezing|timing out|disconnecting|crashing)\b",
    re.IGNORECASE,
)
# A one-off edit of the thing at hand: an imperative whose object is "this" or "these"
# ("Shorten this tweet", "Use metric units in this recipe", "Redo that last answer"); never a
# codebase, a repository or a project, whose conventions last.
_DEICTIC_EDIT = re.compile(
    r"^(?:(?:please|pls|just|now|ok|okay|so|quickly)[,!]?\s+)*(?:shorten|rewrite|redo|"
    r"regenerate|reorder|sort|merge|split|fix|undo|revert|delete|remove|add|make|put|use|skip|"
    r"leave|drop|keep|respond|reply|answer|write|turn|bold|swap|round|pull|pick|read|try|send|"
    r"ignore|bump|indent|disable|switch|comment|run|check|explain|compare|outline|draft|"
    r"cut|tighten|trim|simplify|reformat|format|translate|summari[sz]e|proofread|convert|"
    r"rename|highlight|move|replace|regenerate|expand|condense)\b[^,;.]*?"
    r"\b(?:(?:this|these|those)\b(?! (?:codebase|repo|repository|project|team|company|org)\b)|"
    r"(?:that|the|my) (?:last|previous)\b)",
    re.IGNORECASE,
)
# A request reported about the exchange: "User wants this reply in bullet points".
_REQUESTED = re.compile(
    r"^(?:the )?(?:user|assistant) (?:was asked|asked me|asked to|wants|wanted|requested)\b"
    r"[^.]*\b(?:this|today'?s?|tonight'?s?|the last|that last|quick|for now)\b",
    re.IGNORECASE,
)
# What the assistant hands over: "Here's the revised version", "Below is a comparison table".
_HANDOVER = re.compile(
    r"^(?:(?:sure|ok|okay|great|alright|done|sorry)[,!.—-]?\s+(?:[^.!?]{0,40}[—-]\s*)?)*"
    r"(?:here(?:'s| is| are)|below (?:is|are)|above (?:is|are))\b"
    r"(?! my\b| the user'?s\b| some\b| what\b| how\b)",  # "Here's my resume": the user's
    re.IGNORECASE,
)
# Work the assistant is doing this moment, said without a subject: "Running the test suite
# now.", "Searching the codebase for usages of parseConfig.", "Calculating the tip now..."
_WORKING = re.compile(
    r"^(?:(?:ok|okay|now|next|first|then|alright)[,!.]?\s+)*(?:re-?)?(?:running|searching|"
    r"reading|looking (?:at|into|through)|applying|checking|spinning up|generating|compiling|"
    r"rebuilding|building|installing|restarting|calculating|opening|scanning|fetching|"
    r"analy[sz]ing|reviewing|testing|deploying|downloading|uploading|refactoring|rewriting|"
    r"drafting|debugging|grepping|linting|formatting|moving on to)\b",
    re.IGNORECASE,
)
_WORK_THING = re.compile(
    r"(?:\bnow[.!]*$|\b(?:whether|why|if)\b|\.\.\.$|…$|\bthis may take\b|"
    r"\b(?:tests?|suite|linter|build|patch|branch|"
    r"pr|pull request|commit|files?|folder|repo|codebase|code|script|logs?|config|server|"
    r"container|image|migration|dependencies|package|readme|pdf|spreadsheet|csv|cache|"
    r"endpoint|functions?|module|variable|imports|stack trace|error|bug|notes you|your)\b)",
    re.IGNORECASE,
)
# "Done — I renamed the file", "Done, the file has been renamed."
_DONE = re.compile(r"^(?:ok(?:ay)?[,!]?\s+)?done\s*[—:,!-]", re.IGNORECASE)
# "I couldn't find any results for that.", "I wasn't able to access that URL"
_COULD_NOT = re.compile(
    r"^(?:sorry,? )?i (?:couldn'?t|could not|wasn'?t able to|was unable to|can'?t) (?:find|open|"
    r"reach|access|reproduce|load|locate|fetch|connect)\b.*\b(?:any|that|those|your|the "
    r"(?:file|page|url|api|attachment|server|link))\b",
    re.IGNORECASE,
)
_OUTPUT_LINE = re.compile(
    r"^(?:[d-][rwxst-]{9}[@+.]?\s|total \d+$|[0-9a-f]{7,40} |[\w./-]+:\d+:|\$ |>>> |"
    r"Traceback \(most recent call last\)|\s+File \".*\", line \d+|"
    r"(?:ERROR|WARN(?:ING)?|INFO|DEBUG)\b|\[?\d{2}:\d{2}:\d{2})"
)
_OUTPUT_START = re.compile(
    r"^(?:Traceback \(most recent call last\)|Exception in thread|npm ERR!|error\[E\d+\]|"
    r"HTTP/\d|exit status \d+$|=+ test session starts|Collecting \S+\s+Downloading|"
    r"On branch \S+|Terraform will perform|Filesystem\s+Size|NAME\s+READY\s|[✓✗] |"
    r"\s*id\s+\|\s|\d{1,3}(?:\.\d{1,3}){3} - - \[|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2} )"
)
# A status line a tool or a service printed: an exit, a crash, a test tally, a build, a diff,
# a download, a device's or a service's notice ("Order #48213 confirmed", "Timer finished").
_STATUS_LINE = re.compile(
    r"^(?:exit code \d+|process exited with code \d+|segmentation fault|killed: \d+|"
    r"HTTP \d{3}\b|npm (?:WARN|ERR)|fatal: |FAILED |PASS |(?-i:[A-Z]\w*(?:Error|Exception)): |"
    r"Uncaught \w+|\d+ (?:passed|failed)\b|=+ [^=]+ =+$|build (?:succeeded|failed)|"
    r"coverage: \d[\d.]*%|diff --git|--- a/|step \d+/\d+ :|==> |compiling \S+ v\d|"
    r"container id\b|ping \d|\d+ bytes from|timer finished|alarm (?:dismissed|set for)|"
    r"order #?\S+ (?:confirmed|shipped)|reminder created:|sync complete|error \d{3}:|"
    r"\[weather\]|delivery slot|no new (?:messages|emails|notifications)|search results:|"
    r"exchange rate|bluetooth: |uploaded \d+ |payment of \S+ .* processed|route: \d|"
    r"flight \w+ status:|package status:|your (?:driver|ride|order|package) .* arriving|"
    r"\w+(?:,\w+){2,}\s+\S+,)",
    re.IGNORECASE,
)
# What a vague note is made of: words that hold no particular thing, and function words.
_GENERIC = frozenset(
    """thing things stuff something anything everything change changes changed made make making
    update updates updated fix fixes fixed issue issues problem problems bug bugs work worked
    working code data database system systems feature features improvement improvements
    important good better best bad great nice use used uses using various several item items
    note notes info information detail details done idea ideas plan plans
    decision decisions progress task tasks project projects security performance quality""".split()
)
_FUNCTION = frozenset(
    """a an the some any this that these those it its we our us they them their is are was
    were be been being am do does did have has had will would should can could may might
    must to of in on for with at by from and or but so as about into over up out not no very
    really just also too all more most much many lot lots""".split()
)
# Labels and tags before a note's text: "[decision] ", "#infra ", "Note: ".
_TAGS = re.compile(r"^\s*(?:\[[^\]\n]{1,30}\]\s*|#\w+\s*|\w+:\s+)+")
_INTERACTION = re.compile(
    r"^(?:the )?user (?:greeted|said (?:yes|no|hi|hello|thanks|thank you|ok|okay|goodbye|bye)|"
    r"asked (?:about|for|whether|if|how|what|where|when|who|why)|requested to|"
    r"wants to know|seems|thanked|acknowledged|agreed|laughed|replied|responded|"
    r"is chatting|started a conversation|ended the conversation)\b|"
    r"^(?:the )?user'?s? [\w ]{1,40} (?:is|are) (?:unknown|not known|not yet known)\b",
    re.IGNORECASE,
)


def _json(text: str) -> bool:
    if len(text) < 20 or text[0] not in "[{":
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def noise(text: str) -> Noise | None:
    """The rule that recognises ``text`` as certain noise, or None: keep it. A turn is judged
    by what is said, without its stamp and speaker ("[8 May, 2023] Ann: Thanks!")."""
    stripped = _SAID.sub("", text.strip(), count=1).strip()
    words = _words(stripped)
    if not words:
        return Noise("empty", "it holds no word")
    if _DURABLE.search(stripped):
        return None
    if len(words) <= 14 and (_pleasant(stripped) or _GREETING.match(stripped)):
        return Noise("pleasantry", "a greeting, thanks or acknowledgement")
    if len(words) <= 14 and all(
        _pleasant(s) or _reaction(s) for s in map(_unaddressed, _sentences(stripped))
    ):
        return Noise("pleasantry", "a reaction to what the other said")
    lines = [line for line in stripped.splitlines() if line.strip()]
    if len(lines) >= 2 and sum(bool(_OUTPUT_LINE.match(line)) for line in lines) * 2 > len(lines):
        return Noise("tool output", "lines a command printed")
    if _OUTPUT_START.match(stripped) or _json(stripped):
        return Noise("tool output", "what a command or an API printed")
    if _STATUS_LINE.match(stripped) and len(words) <= 60:
        return Noise("tool output", "a status line a tool or a service printed")
    if len(words) > 40:  # a long text states something, whatever its first words
        return None
    if _vague(stripped):
        return Noise("vague", "a few words that name nothing in particular")
    sentences = _sentences(stripped)
    if (_INTERACTION.search(stripped) or _REQUESTED.match(stripped)) and len(sentences) == 1:
        return Noise("interaction note", "a note about the exchange, not about anyone")
    # Why at most 14 words: a longer question carries its asker's facts ("... keep my living
    # room dust-free, with a cat that sheds a lot?": LongMemEval evidence).
    asked = _asked(sentences)
    if asked and len(_words(asked)) <= 14 and _QUESTION_START.match(asked):
        return Noise("question", "a question: it asks, it states nothing")
    if (
        (_REQUEST.match(stripped) or _ONCE.match(stripped))
        and len(sentences) <= 2
        and not (_first_person_fact(stripped))
        and not _standing(stripped)
    ):
        return Noise("request", "a one-off request to the assistant")
    if _THIS_ONCE.search(stripped) and len(words) <= 30 and not _first_person_fact(stripped):
        return Noise("request", "a request for this once")
    if (
        _DEICTIC_EDIT.match(stripped)
        and len(words) <= 25
        and len(sentences) <= 2
        and not _first_person_fact(stripped)
    ):
        return Noise("request", "a one-off request about the text at hand")
    if (
        _NARRATION.match(stripped)
        and len(words) <= 30
        and not _finding(stripped)
        and not _MINE.search(stripped)
    ):
        return Noise("narration", "the assistant narrating its own work")
    if (
        (_REPORT.match(stripped) or _DID_FOR_YOU.match(stripped))
        and len(words) <= 30
        and not _MINE.search(stripped)
    ):
        return Noise("narration", "the assistant reporting its own work")
    if (_HANDOVER.match(stripped) or _DONE.match(stripped)) and len(words) <= 20:
        return Noise("narration", "the assistant handing over its work")
    if _WORKING.match(stripped) and _WORK_THING.search(stripped) and len(words) <= 20:
        return Noise("narration", "the assistant narrating its own work")
    if _COULD_NOT.match(stripped) and len(words) <= 25:
        return Noise("narration", "the assistant reporting what it could not do")
    moment = _STATUS.search(stripped) or _GAUGE.search(stripped)
    moment = moment or (_MOMENT.search(stripped) and not _LASTING.search(stripped))
    if moment and len(words) <= 16:
        return Noise("status", "a status of the moment")
    if _MOOD.match(stripped) and len(words) <= 12:
        return Noise("status", "how someone feels this moment")
    return None


def _pleasant(text: str) -> bool:
    """Nothing but greetings, thanks, praise and farewells (:data:`_PLEASANT`,
    :data:`_PLEASANT_PHRASE`)."""
    return all(w in _PLEASANT for w in _words(_PLEASANT_PHRASE.sub(" ", text)))


# "That sounds delicious!", "Oh no, that must be tricky.", "That's serious dedication.": a
# judgement of "that" in at most two plain words (no name, number or first person after the
# first word: "That's my favourite!", "It's a Golden Retriever" are kept).
# The interjections a reaction or a remark may open with ("Oh no, ...", "Wow! ...").
_OPENING = (
    r"(?:(?:oh|ah|ahh|aww|wow|whoa|ooh|omg|haha|yay|ugh|yum|oh no|oh wow|hmm|okay|ok)[,!.]*\s+)*"
)
_REACTION = re.compile(
    _OPENING
    + r"(?:that(?:'s|’s| is| was| must be| must have been)|(?:that|this) (?:sounds|looks|seems))"
    r"(?: (?:so|really|such|very|pretty|super|absolutely|totally|quite|just))*"
    r"(?: like)?(?: (?:a|an))?(?: [a-z][a-z'’-]*){1,2}[.!]*"
)
# ... or a judgement or a wish with no "that": "Smart move.", "Such a classic.", "Nice find!",
# "Have a great trip!", "Take care of yourself!", "Best of luck!".
_REMARK = re.compile(
    _OPENING + r"(?:"
    r"(?:such an?|what an?|so) [a-z'’-]+(?: [a-z'’-]+)?"
    r"|(?:smart|nice|good|great|beautiful|lovely|brilliant|wise|bold|solid|fun|classic)"
    r" (?:move|choice|find|idea|call|plan|pick|one|thinking|stuff)"
    r"|have (?:fun|a (?:great|good|nice|safe|lovely|fun|wonderful) [a-z]+)"
    r"|take care(?: of yourself)?|take it easy(?:, okay\?)?|get well soon|feel better soon"
    r"|(?:good|best of) luck|enjoy(?: it)?|go you|good for you|poor thing|fingers crossed"
    r")[.!]*"
)
_FIRST_PERSON_WORD = re.compile(r"\b(?:i|i'm|i've|me|my|mine|we|we're|us|our)\b", re.IGNORECASE)


# The person a sentence is said to: "Congrats Noah!!", "Wow, Captain Tariq!", "Sofia, ...".
_ADDRESS_END = re.compile(
    r"\b((?i:congrats|congratulations|thanks|thank you|wow|yay|hey|hi|hello|cheers|bravo|"
    r"welcome back|night|morning))"
    r",?\s+(?:[A-Z][a-z'’]+\.?\s+)?[A-Z][a-z'’]+(?=[!.]*$)"
)
_ADDRESS_START = re.compile(r"^(?:[A-Z][a-z'’]+\.?\s+)?[A-Z][a-z'’]+,\s+")


def _unaddressed(sentence: str) -> str:
    """``sentence`` without the name of whom it is said to: before a comma at its start
    ("Sofia, that's huge."), or at its end after a greeting, thanks or praise ("Congrats
    Noah!!"). "It's Keanu Reeves!" names no one it is said to."""
    return _ADDRESS_START.sub("", _ADDRESS_END.sub(r"\1", sentence.strip()), count=1)


def _reaction(sentence: str) -> bool:
    """A sentence that only judges what the other just said (:data:`_REACTION`)."""
    if re.search(r"\d|(?<!^)\b[A-Z]", sentence) or _FIRST_PERSON_WORD.search(sentence):
        return False
    low = sentence.lower()
    return _REACTION.fullmatch(low) is not None or _REMARK.fullmatch(low) is not None


def _vague(text: str) -> bool:
    """At most six words, no name or number, and every word but function words one any note
    could hold (:data:`_GENERIC`). A word about the user or a person ("I", "my", "you", "her")
    is no function word here: "Security is important to me" says what matters to the user."""
    said = re.sub(r"#\w+", "", _TAGS.sub("", text)).strip()
    words = _words(said)
    if not words or len(words) > 6 or re.search(r"\d|(?<!^)\b[A-Z]", said):
        return False
    content = [w for w in words if w not in _FUNCTION]
    return bool(content) and all(w in _GENERIC for w in content)


def _asked(sentences: list[str]) -> str | None:
    """The question of a text that is one question, without the interjections before it
    ("Ooh, what kind of bread?"); else None. A question after an exclamation ("Wow! What got
    you into running?") is kept: in LoCoMo such turns are evidence."""
    if len(sentences) != 1 or not sentences[0].endswith("?"):
        return None
    question = sentences[0]
    while (m := re.match(r"((?:[^\W\d_]+(?:['’]\w+)?\s?){1,3}),\s+", question)) and all(
        w in _PLEASANT for w in _words(m[1])
    ):
        question = question[m.end() :]
    return question


_FIRST_PERSON_FACT = re.compile(
    r"\b(?:i am|i'm|i have|i've got|we are|we're|we use|my \w+(?: \w+)? (?:is|are|was))\b",
    re.IGNORECASE,
)


def _finding(text: str) -> bool:
    """What a look found, after the look ("I reviewed the contract; the notice period is 60
    days.", "I checked the config: the timeout is 30 s."): a fact said by whoever looked, kept.
    Not what comes next ("...; let me know if ...", "...: here are the options")."""
    m = _LOOKED.match(text)
    if m is None:
        return False
    rest = text[m.end() :].strip()
    return len(rest.split()) >= 4 and not _NEXT.match(rest)


# A look and a clause after it: "I checked the logs; ...", "I've reviewed the contract: ...".
_LOOKED = re.compile(
    r"^(?:i|i'?ve|i have) (?:just )?(?:checked|searched|looked (?:up|into|through|at)|scanned|"
    r"reviewed|read|went through|gone through)\b[^:;—]*[:;—]",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"(?:let me|let's|here(?:'s| is| are)|have a look|this (?:may|might|will) take|shall i|"
    r"should i|do you|would you|want me|i'?ll|nothing|no (?:results|issues|problems))\b",
    re.IGNORECASE,
)


def standing_instruction(text: str) -> bool:
    """A standing instruction that opens like a one-off request ("Find the cheapest option
    when I ask for flights.", "Explain code changes with a short diff summary."): the request
    rule lets it through, and the default gate keeps it as lasting. Read as :func:`noise`
    reads a text: without a stamp, speaker or label ("Rule: Explain code changes ...")."""
    stripped = _SAID.sub("", text.strip(), count=1).strip()
    return bool(_REQUEST.match(stripped) or _ONCE.match(stripped)) and _standing(stripped)


def labelled_lasting(text: str) -> str | None:
    """The label that marks a note as one to keep ("[decision] ...", "Decision: ...", "#rule
    ...", "ADR-12: ..."), else None: the writer said what kind of lasting note it is; a tagged
    note is what the classifier saw least of ("[decision] Selected bcrypt for passwords" p
    near 0 was trashed by replay)."""
    m = _LASTING_LABEL.match(text) or _LASTING_LABEL.match(_SAID.sub("", text.strip(), count=1))
    return next(g for g in m.groups() if g).lower() if m else None


# The labels of a lasting note: a decision, a rule, a convention, a constraint, ...
_LABEL_WORD = (
    r"decisions?|rules?|conventions?|policy|constraints?|requirements?|guidelines?|standards?|"
    r"architecture|gotchas?|lessons?(?: learned)?|learnings?|preferences?|adr(?:[- ]?\d+)?"
)
_LASTING_LABEL = re.compile(
    rf"^\s*(?:\[({_LABEL_WORD})\]|#({_LABEL_WORD})\b|\*\*({_LABEL_WORD})\*\*|"
    rf"({_LABEL_WORD})\s*[:—–]|({_LABEL_WORD})\s+-\s)",
    re.IGNORECASE,
)


def convention(text: str) -> bool:
    """A rule of how to work, said as an imperative about a kind of thing ("Use snake_case for
    Python identifiers.", "Prefer composition over inheritance.", "Never commit directly to
    main.", "Make surgical changes when possible ..."): the classifier, trained on one-off
    requests, gives some P near 0, and replay then trashed them. Not a request about a thing
    at hand ("Skip the intro.", "Use the blue one.") or for one occasion ("... today")."""
    stripped = _TAGS.sub("", _SAID.sub("", text.strip(), count=1).strip())
    if not 3 <= len(_words(stripped)) <= 30 or len(_sentences(stripped)) > 2:
        return False
    if not _CONVENTION.match(stripped) or _ADDRESSED.search(stripped):
        return False
    return not _this_once(stripped)


# An imperative about a kind of thing: the verb of a working rule, then a bare object (no
# article, "this", "me", ...) or "always" / "never" / "every" / "without" / "unless".
_BARE = (
    r"\s+(?!(?:a|an|the|this|that|these|those|me|us|it|them|my|your|his|her|their|its|one|"
    r"some|out|up|off|on|in|over|back|down|to|for|about|whether|if|what|how|why|anything|going|"
    r"\d+)\b)"
)
_CONVENTION = re.compile(
    r"^(?:please\s+)?(?:(?:always|never|don'?t|do not)\s+(?!me\b|us\b)[\w-]+\s+(?!me\b|us\b)\S|"
    # the verbs of a working rule: a bare object is enough ("Use snake_case for ...")
    r"(?:use|prefer|avoid|pin|log|return|squash|follow|document|store|default to|stick to|"
    r"indent|limit|cap|require|wrap|validate|sanitize|prefix|suffix|quote|escape)" + _BARE + r"|"
    # verbs of a request as much as of a rule: with a word of every time ("Write tests for
    # every bug fix", "Make surgical changes when possible"; not "write about ...")
    r"(?:write|make|put|run|keep|test|check|sort|group|mark|cache|retry|merge|rebase|tag|commit|"
    r"import|lint|format|name|ask)"
    + _BARE
    + r"(?![\w-]+ing\b)(?=.*\b(?:every|all|each|any|whenever|"
    r"when possible|wherever|always|never|instead of|unless|by default|with an? |before|after|"
    r"under|at most|at least)\b))",
    re.IGNORECASE,
)
# Said to a person, not a rule of work: "Don't let anything stop you.", "Keep pushing and
# you'll get there."
_ADDRESSED = re.compile(r"\b(?:you|you'll|you're|your|yourself)\b", re.IGNORECASE)
# Where the team works is no thing at hand: "Use tabs, not spaces, in this codebase."
_WHERE_WE_WORK = re.compile(
    r"\b(?:this|that) (?:codebase|code base|project|repo|repository|team|company|app|service|"
    r"monorepo|workspace|org|organi[sz]ation)\b",
    re.IGNORECASE,
)


def _standing(text: str) -> bool:
    """A standing instruction, though it opens like a request: about a kind of thing
    (:data:`_STANDING`) or for every time (:data:`_HABITUAL`); not one about a thing at hand
    ("this report", "the attached") or for one occasion ("... for tonight", "... this time")."""
    if _this_once(text):
        return False
    return bool(_STANDING.match(text) or _HABITUAL.search(text))


def _this_once(text: str) -> bool:
    """A request for one occasion ("... this time", "... tonight") or about a thing at hand
    ("this report", "the attached PDF"); where the team works is no thing at hand ("Use tabs,
    not spaces, in this codebase.")."""
    return bool(
        _ONCE.match(text) or _OCCASION.search(text) or _AT_HAND.search(_WHERE_WE_WORK.sub("", text))
    )


# A thing at hand: "this report", "the attached PDF", "the text below".
_AT_HAND = re.compile(r"\b(?:this|these|that|those|attached|below|above|here)\b", re.IGNORECASE)
# What makes a request one for every time: "when I ask for flights", "when a dependency has a
# known CVE", "at the end of each answer", "before making changes", "first, then details".
# Not "when you" ("Tell me when you're done" is for this once).
_HABITUAL = re.compile(
    r"\b(?:whenever|when (?:i|we|a|an|there|someone|anyone)\b|every (?:time|answer|reply|"
    r"response|message|day|week|morning|evening)|each (?:answer|reply|response|message|time|"
    r"day|week)|before (?:making|changing|committing|pushing|deleting|sending|merging|"
    r"running|adding)|by default|from now on|going forward|in (?:the )?future|first,? then)\b",
    re.IGNORECASE,
)
# One occasion: "for tonight", "this time".
_OCCASION = re.compile(
    r"\b(?:tonight|today|tomorrow|right now|now|this (?:morning|afternoon|evening|week|weekend|"
    r"time|once))\b",
    re.IGNORECASE,
)


def _first_person_fact(text: str) -> bool:
    """A request that also says something about the user ("Find me a vegan place, I'm
    vegan") holds a fact: kept."""
    return bool(_FIRST_PERSON_FACT.search(text))
