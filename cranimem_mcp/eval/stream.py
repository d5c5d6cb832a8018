"""The write stream of one question, clean or noisy (paper Section 4).

Clean: the question's ten context paragraphs, one write each, in a seeded shuffle. Noisy:
the same stream with a fixed injection schedule: after every ``inject_every`` task writes,
``noise`` distractor snippets, each drawn from another question's paragraphs or from a small
set of generic chit-chat lines. The shuffle and the distractors depend only on the seed and
the question's position, so every system sees exactly the same stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from .data import Question

Origin = Literal["gold", "context", "noise"]

CHIT_CHAT = (
    "Haha, that's hilarious, thanks for sharing!",
    "Good morning! How's your day going so far?",
    "Ugh, it's raining again here. So gloomy.",
    "I just made a cup of coffee, brb.",
    "Did you see the game last night? What a finish.",
    "lol ok, sounds good to me",
    "My cat keeps walking across the keyboard.",
    "Thanks a lot, that's really helpful!",
    "I'm so tired today, didn't sleep well.",
    "Can you believe it's already the weekend again?",
    "Random thought: pineapple on pizza is underrated.",
    "Hold on, someone is at the door.",
    "That meme you sent me yesterday was great.",
    "Okay cool, let's talk later then.",
    "I think I need another vacation already.",
    "Wow, the traffic this morning was unreal.",
    "Nice, I'll have a look after lunch.",
    "Hmm, not sure, let me think about it.",
    "By the way, happy Friday!",
    "I finally finished that TV series everyone talks about.",
)
CHIT_CHAT_SHARE = 1 / 3


@dataclass(frozen=True)
class Write:
    text: str
    origin: Origin
    title: str | None = None  # the paragraph's title; None for chit-chat


def write_stream(
    questions: list[Question],
    index: int,
    *,
    seed: int,
    noisy: bool,
    inject_every: int = 2,
    noise: int = 3,
) -> list[Write]:
    """The writes for ``questions[index]``; distractors come from the other questions."""
    question = questions[index]
    gold = question.gold_titles
    order_rng = random.Random(f"{seed}:order:{index}")
    paragraphs = list(question.context)
    order_rng.shuffle(paragraphs)
    task = [Write(p.text, "gold" if p.title in gold else "context", p.title) for p in paragraphs]
    if not noisy or noise <= 0 or inject_every <= 0:
        return task
    # A separate generator: the clean and the noisy stream share the task order.
    noise_rng = random.Random(f"{seed}:noise:{index}")
    own_titles = {p.title for p in question.context}
    out: list[Write] = []
    for turn, write in enumerate(task, start=1):
        out.append(write)
        if turn % inject_every == 0:
            out += [_distractor(questions, index, own_titles, noise_rng) for _ in range(noise)]
    return out


def _distractor(
    questions: list[Question], index: int, own_titles: set[str], rng: random.Random
) -> Write:
    if len(questions) < 2 or rng.random() < CHIT_CHAT_SHARE:
        return Write(rng.choice(CHIT_CHAT), "noise")
    while True:
        other = rng.randrange(len(questions) - 1)
        other += other >= index  # any question but this one
        paragraph = rng.choice(questions[other].context)
        if paragraph.title not in own_titles:
            return Write(paragraph.text, "noise", paragraph.title)
