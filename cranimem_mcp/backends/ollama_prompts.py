"""What a chat model is told and what it must answer: prompt files and reply models.

A prompt file (``prompts/*.md`` beside this module, package data) holds the system text, then
``=== user ===`` and the user template. A reply model's JSON schema is sent as the chat call's
``format``; a reply is valid only if it was not cut off (``done_reason``), parses, and
validates against the model (scores clamped to [0, 1]). :func:`ask` retries an invalid reply
once with the validation error in the prompt, then raises ``ModelOutputError``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError

from cranimem_mcp.backends.llm import current_meter
from cranimem_mcp.backends.ollama_backend import ChatReply, OllamaBackend
from cranimem_mcp.errors import ConfigError, ModelOutputError
from cranimem_mcp.models import ENTITY_TYPES, EntityType

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

USER_MARK = "=== user ==="


# --- reply models: their JSON schema is what the model is told to produce ----------------


def clamp(value: float) -> float:
    # Why: JSON-schema bounds are advisory for some backends (llama.cpp ignores float bounds).
    return min(1.0, max(0.0, value))


Score = Annotated[float, AfterValidator(clamp), Field(description="0.0 to 1.0")]


class TagReply(BaseModel):
    importance: Score
    surprise: Score
    emotion: Score


class JudgeReply(BaseModel):
    keep: bool
    kind: Literal["constraint", "preference", "plan", "command", "goal_change", "fact", "noise"]
    reason: str = Field(max_length=300)


def _entity_type(value: Any) -> Any:
    return value if value in ENTITY_TYPES else "Other"


class EntityReply(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: Annotated[EntityType, BeforeValidator(_entity_type)]


class RelationReply(BaseModel):
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=80)
    object: str = Field(min_length=1, max_length=200)


class ExtractionItem(BaseModel):
    id: int
    entities: list[EntityReply]
    relations: list[RelationReply]


class ExtractionReply(BaseModel):
    items: list[ExtractionItem]


# --- prompts ----------------------------------------------------------------------------


# Package data, so every kind of install has them (a wheel's data-files land under
# sys.prefix only in a venv: not with `pip install --user`).
PROMPTS = Path(__file__).parent / "prompts"


def prompts_dir(configured: Path | None = None) -> Path:
    """The prompt files: the configured directory, else the package's own ``prompts/``."""
    path = configured or PROMPTS
    if not (path / "tag.md").is_file():
        raise ConfigError(f"prompt files not found in {path} (no tag.md)")
    return path


@dataclass(frozen=True)
class Prompt:
    """A prompt file: the system text, then ``=== user ===`` and the user template with
    ``{name}`` fields (only known names are replaced, so braces in the text are safe)."""

    system: str
    user: str

    @classmethod
    def load(cls, path: Path) -> Prompt:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read prompt {path}: {exc}") from exc
        system, mark, user = text.partition(USER_MARK)
        if not mark:
            raise ConfigError(f"prompt {path} has no '{USER_MARK}' line")
        return cls(system.strip(), user.strip())

    def messages(self, **fields: str) -> list[dict[str, str]]:
        user = self.user
        for name, value in fields.items():
            user = user.replace("{" + name + "}", value)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


async def ask(
    backend: OllamaBackend, model: str, messages: list[dict[str, str]], reply_type: type[R]
) -> R:
    """One chat call whose reply must validate as ``reply_type``; one retry with the error.
    Raises ``ModelOutputError`` after two invalid replies, ``BackendUnavailable`` if the
    backend fails (no retry: the cooldown takes over)."""
    schema = reply_type.model_json_schema()
    for attempt in (1, 2):
        reply = await backend.chat(model, messages, schema)
        try:
            return _parse(reply, reply_type)
        except ModelOutputError as exc:
            meter = current_meter()
            if attempt == 2 or (meter is not None and not meter.allows()):
                raise
            backend.usage.retries += 1
            logger.info("invalid reply from %s, retrying once: %s", model, exc)
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content[:4000]},
                {
                    "role": "user",
                    "content": f"That reply was invalid: {exc}. Answer again with only a JSON "
                    "object that matches the schema.",
                },
            ]
    raise AssertionError("unreachable")


def _parse(reply: ChatReply, reply_type: type[R]) -> R:
    if reply.done_reason not in (None, "stop"):
        # Cut off at the token limit: even if it parses, it is missing what came after.
        raise ModelOutputError(f"the reply was cut off (done_reason={reply.done_reason!r})")
    try:
        return reply_type.model_validate_json(reply.content)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()
        )
        raise ModelOutputError(errors[:600]) from exc
