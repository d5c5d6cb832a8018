"""HotpotQA (distractor setting) in either published layout, read into one shape.

The official layout is a JSON list of ``{_id, question, answer, type, level,
supporting_facts: [[title, sent_id]], context: [[title, [sentences]]]}``; the Hugging Face
layout is JSON lines of ``{id, ..., supporting_facts: {title: [], sent_id: []},
context: {title: [], sentences: [[...]]}}``. Both become :class:`Question`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cranimem_mcp.errors import InvalidInput


@dataclass(frozen=True)
class Paragraph:
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        """What the agent writes to memory: "Title: text"."""
        return f"{self.title}: {''.join(self.sentences).strip()}"


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    type: str
    level: str
    supporting_facts: tuple[tuple[str, int], ...]
    context: tuple[Paragraph, ...]

    @property
    def gold_titles(self) -> set[str]:
        return {title for title, _ in self.supporting_facts}

    def supporting_sentences(self) -> list[str]:
        """The gold sentences that exist in the context (a few ids in HotpotQA point past the
        end of their paragraph; those are skipped, as the official evaluation does)."""
        by_title = {p.title: p for p in self.context}
        out = []
        for title, sent_id in self.supporting_facts:
            paragraph = by_title.get(title)
            if paragraph is not None and 0 <= sent_id < len(paragraph.sentences):
                sentence = paragraph.sentences[sent_id].strip()
                if sentence:
                    out.append(sentence)
        return out

    @property
    def is_yes_no(self) -> bool:
        return self.answer.strip().lower() in ("yes", "no")


def _from_row(row: dict[str, Any]) -> Question:
    facts, context = row["supporting_facts"], row["context"]
    if isinstance(facts, dict):  # Hugging Face layout
        facts = list(zip(facts["title"], facts["sent_id"], strict=True))
        context = list(zip(context["title"], context["sentences"], strict=True))
    return Question(
        id=str(row.get("_id") or row["id"]),
        question=row["question"],
        answer=str(row["answer"]),
        type=row.get("type", ""),
        level=row.get("level", ""),
        supporting_facts=tuple((str(t), int(i)) for t, i in facts),
        context=tuple(Paragraph(str(t), tuple(s)) for t, s in context),
    )


def load_questions(path: Path, limit: int | None = None) -> list[Question]:
    """Read a HotpotQA file in either layout (a JSON list or JSON lines)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            rows = json.loads(text)
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        questions = [_from_row(r) for r in rows]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{path} is not HotpotQA in a layout we know: {exc!r}") from exc
    return questions[:limit] if limit is not None else questions
