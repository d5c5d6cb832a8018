"""Domain types shared by the engine, the MCP tools and the CLI.

Tool results are these models, so each MCP tool gets an output schema and structured content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

SCOPE_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
MEMORY_ID_PATTERN = r"^m_[0-9a-f]{20}$"
SCOPE_RE = re.compile(SCOPE_PATTERN)
MEMORY_ID_RE = re.compile(MEMORY_ID_PATTERN)

# The bounds of what callers may pass, in one place: the MCP tools' signatures declare them
# (the SDK validates them against the input schema) and the engine checks them again for
# every other caller (the CLI, the owner's endpoint for bridges, the inspector).
MAX_CONTENT = 32_000  # characters of a memory or a query
MAX_TAGS = 32  # tags per memory
MAX_TAG = 64  # characters per tag
MAX_GOAL = 2000  # characters of a goal
MAX_SOURCE = 200  # characters of a source
MAX_ENTITY = 500  # characters of an entity name (forget, the inspector)
MAX_IDS = 1000  # ids per forget or restore call
MIN_K, MAX_K = 1, 50  # memories a recall returns at most
MIN_CHARS, MAX_CHARS = 200, 200_000  # characters of a recall's context block
MAX_AS_OF = 64  # characters of an as_of time
MAX_FACT_SOURCES = 10  # memories a fact lists as its sources (its support counts all)
MAX_PAGE = 100  # memories per list_memories page
MAX_INSPECT = 200  # memories per inspector listing (and facts or entities per graph query)
GRAPH_NODES = 40  # entities a graph overview draws at first (the default)
ENTITY_FACTS = 60  # facts of one entity's neighbourhood (the default)

Scope = Annotated[str, Field(pattern=SCOPE_PATTERN, description="1-64 chars of [A-Za-z0-9_.:-]")]
MemoryId = Annotated[str, Field(pattern=MEMORY_ID_PATTERN)]
Tier = Literal["buffer", "longterm", "trash"]
Path_ = Literal["episodic", "graph"]

ENTITY_TYPES = (
    "Person",
    "Organization",
    "Location",
    "Date",
    "Project",
    "Task",
    "Tool",
    "Preference",
    "Event",
    "Other",
)
EntityType = Literal[
    "Person",
    "Organization",
    "Location",
    "Date",
    "Project",
    "Task",
    "Tool",
    "Preference",
    "Event",
    "Other",
]


class Utility(BaseModel):
    importance: float = Field(ge=0.0, le=1.0)
    surprise: float = Field(ge=0.0, le=1.0)
    emotion: float = Field(ge=0.0, le=1.0)
    base: float = Field(ge=0.0, le=1.0)

    @classmethod
    def of(cls, importance: float, surprise: float, emotion: float) -> Utility:
        """BaseUtility is the mean of the three signals (paper B.1)."""
        i, s, e = (min(1.0, max(0.0, x)) for x in (importance, surprise, emotion))
        return cls(importance=i, surprise=s, emotion=e, base=(i + s + e) / 3.0)


class Tagging(BaseModel):
    """A tagger's answer: the utility signals and who produced them (``tagged_by``)."""

    utility: Utility
    tagged_by: str


class Judgement(BaseModel):
    """The second look at a low-relevance write: is it noise, or something to keep?"""

    keep: bool
    kind: Literal["constraint", "preference", "plan", "command", "goal_change", "fact", "noise"]
    reason: str
    judged_by: str = Field("heuristic", description="Who judged: a model, or the heuristics")


class Entity(BaseModel):
    name: str
    type: EntityType = "Other"


class Relation(BaseModel):
    subject: str
    predicate: str
    object: str
    functional: bool | None = Field(
        None,
        description="Single-valued for its subject (a new object replaces the old one); "
        "false: it ends no other fact (a state the text puts in the past, a denial limited "
        "to a time, a place or a manner); null: as its predicate says",
    )


class Extraction(BaseModel):
    entities: list[Entity] = []
    relations: list[Relation] = []
    extracted_by: str = "heuristic"


class BufferInfo(BaseModel):
    size: int
    capacity: int


class RememberResult(BaseModel):
    status: Literal["stored", "merged", "rejected"]
    id: str | None = Field(None, description="The memory's id for its whole life; null if rejected")
    relevance: float = Field(description="Cosine similarity to the scope's goal")
    threshold: float = Field(description="The threshold the deciding stage compared against")
    gate: str | None = Field(
        None,
        description="The stage that decided: similarity, context, second_look, durable "
        "(the default gate of a scope without its own goal), pin, secrets",
    )
    durability: float | None = Field(
        None, description="Default gate: the probability that the write is durable"
    )
    pinned: bool = Field(
        False, description="Pinned: kept whatever its score; replay never prunes it"
    )
    redacted: list[str] = Field(
        default=[],
        description="Kinds of credential replaced by a placeholder before storing (never values)",
    )
    utility: Utility | None = None
    entities: list[str] = []
    tagged_by: str | None = None
    reason: str
    buffer: BufferInfo
    scope: str
    evicted: list[Decision] = Field(
        default=[],
        description="Buffer overflow: the oldest entries that went through replay during this "
        "write (a server usually makes room after the write that filled the buffer, unlisted)",
    )
    superseded: list[Fact] = Field(
        default=[], description="Facts whose validity this write ended (confirm with the user)"
    )
    observed_at: datetime | None = Field(
        None, description="When the event happened: a date the text states, else the write time"
    )


class RecallItem(BaseModel):
    id: str
    scope: str | None = None
    path: Literal["recent", "memory", "trash"]
    content: str
    score: float
    created_at: datetime
    tier: Tier
    observed_at: datetime | None = None
    superseded: bool = Field(False, description="Every fact it states has changed since")


class Fact(BaseModel):
    subject: str
    predicate: str
    object: str
    support: int = Field(description="How many active memories state it")
    sources: list[str] = Field(
        description=f"Ids of the memories that state it, the most recently asserted first, "
        f"at most {MAX_FACT_SOURCES}"
    )
    score: float = 0.0
    hops: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(None, description="null while the fact is current")
    superseded: bool = False


def fact_text(fact: Fact) -> str:
    """A fact as a line of text: "Noor lives in Boston"."""
    return f"{fact.subject} {fact.predicate.replace('_', ' ')} {fact.object}"


class RecallResult(BaseModel):
    context: str
    items: list[RecallItem]
    facts: list[Fact]
    took_ms: float
    trashed: list[str] = Field(
        [],
        description="Ids of trashed memories (pruned or forgotten) that match the query better "
        "than what was returned, best first; `restore` brings them back",
    )
    notice: str | None = Field(None, description="What the caller should know: trashed matches")


class Decision(BaseModel):
    id: str
    replay_score: float
    decision: Literal["promote", "trash"]
    reason: str


class ConsolidationReport(BaseModel):
    scope: str | None = None
    replayed: int = 0
    promoted: int = 0
    pruned: int = 0
    purged: int = 0
    triples_added: int = 0
    triples_reinforced: int = 0
    decisions: list[Decision] = []
    dry_run: bool = False
    trigger: str = "on_demand"
    finished_at: datetime | None = None
    took_ms: float = 0.0
    llm_calls: int = Field(0, description="Model calls made by this run (within its budget)")
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_fallbacks: int = Field(0, description="Items the heuristics handled instead")
    retagged: int = Field(0, description="Fallback-tagged buffer items re-tagged by the LLM")
    reextracted: int = Field(0, description="Fallback-linked memories re-extracted by the LLM")


class ForgetResult(BaseModel):
    forgotten: int
    ids: list[str]
    facts_removed: int
    hard: bool
    dry_run: bool = False
    unchanged: list[str] = Field(
        default=[], description="Ids already in the trash: a soft forget leaves them as they are"
    )


class RestoreResult(BaseModel):
    restored: int
    ids: list[str]


class MemoryEntry(BaseModel):
    """One memory as :meth:`MemoryEngine.list_memories` shows it (no vector)."""

    id: str
    scope: str
    tier: Tier
    content: str = Field(description="The text, cut to its first 500 characters if longer")
    truncated: bool = Field(False, description="true when `content` was cut")
    created_at: datetime = Field(description="When it was written")
    observed_at: datetime | None = Field(None, description="When the event it tells happened")
    tier_changed_at: datetime | None = Field(
        None,
        description="When it entered its tier (trashed, promoted, restored); null if it never "
        "moved",
    )
    reason: str | None = Field(
        None, description="Why it is in its tier: the gate's, replay's or a request's reason"
    )
    base_utility: float | None = Field(None, description="Mean of importance, surprise, emotion")
    relevance: float | None = Field(None, description="Similarity to the goal when written")
    replay_score: float | None = Field(None, description="The last consolidation's score")
    pinned: bool = False
    source: str | None = None  # where it came from, as the write said


class MemoryPage(BaseModel):
    scope: str
    tier: Tier | None = Field(None, description="The tier listed; null for every tier")
    total: int = Field(description="Memories in the scope (and tier) in all")
    offset: int
    items: list[MemoryEntry]
    next_offset: int | None = Field(None, description="Offset of the next page; null at the end")


class GoalResult(BaseModel):
    scope: str
    goal: str


class ScopeStats(BaseModel):
    scope: str
    goal: str
    buffer_size: int
    buffer_capacity: int
    longterm: int
    trash: int
    facts: int
    rejected_writes: int
    last_consolidation: ConsolidationReport | None = None


class Stats(BaseModel):
    data_dir: str
    models: dict[str, str]
    scopes: list[ScopeStats]
    fallbacks: dict[str, int] = {}


class MemoryDetail(BaseModel):
    """One memory with everything the inspector shows of it (no vector)."""

    id: str
    scope: str
    tier: Tier
    content: str
    created_at: datetime
    observed_at: datetime | None = None
    last_access: datetime | None = None
    tier_changed_at: datetime | None = None
    importance: float | None = None
    surprise: float | None = None
    emotion: float | None = None
    base_utility: float | None = None
    relevance: float | None = None
    tagged_by: str | None = None
    entities: list[str] = []
    tags: list[str] = []
    source: str | None = None
    replay_score: float | None = None
    decision_reason: str | None = None
    gate_reason: str | None = None
    pinned: bool = False


class GraphNode(BaseModel):
    id: str = Field(description="The entity's canonical name")
    label: str
    support: int = Field(description="Active memories that mention it")


class GraphEdge(BaseModel):
    source: str = Field(description="The subject's canonical name")
    target: str = Field(description="The object's canonical name")
    predicate: str
    support: int


class FactSource(BaseModel):
    id: str
    content: str
    tier: Tier


class EntityFact(GraphEdge):
    subject: str
    object: str
    sources: list[FactSource]


class GraphView(BaseModel):
    """The best-supported entities of a scope's long-term memory and the facts among them."""

    scope: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    total: int = Field(description="Entities with support in all (nodes holds the first)")


class EntityView(BaseModel):
    """One entity's neighbourhood: its facts, their other ends, their source memories."""

    scope: str
    entity: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    facts: list[EntityFact]


RememberResult.model_rebuild()


@dataclass(slots=True, kw_only=True)
class Memory:
    """One memory: a row of the episodic table (paper B.2), whole, as the code reads it. The
    episodic store converts at its edge: what it takes and returns are these, not dicts.

    ``vector`` (and ``windows``) is ``None`` when the read did not ask for it
    (``vectors=False``); a record without its vector can be upserted, but then the working set
    reloads its scope.

    A plain slots dataclass because the store converts thousands of rows per consolidation
    and per recall at 10k memories: measured here, building one from a row dict costs about
    7 us, against 25 us validated by pydantic and 29 us as a frozen dataclass. It is not
    frozen for that cost alone: a change is made as a new record (:meth:`moved`, or
    :func:`dataclasses.replace`), never by assigning to a field of a record someone else
    holds."""

    id: str
    scope: str
    tier: str
    content: str
    content_hash: str
    vector: Any = None  # a sequence of floats (list or numpy array), or None when not read
    # A long text's passages (backends/passages.py; or, for a run without a sentence end,
    # its windows past the first 256 word pieces its vector reads): an array of their unit
    # vectors, one row each, searched with the vector (the best lifts the memory's cosine);
    # None: it has none, or the read did not ask for vectors.
    windows: Any = None
    created_at: datetime
    observed_at: datetime | None = None
    turn: int | None = None
    entities: list[str] = field(default_factory=list)
    importance: float | None = None
    surprise: float | None = None
    emotion: float | None = None
    base_utility: float | None = None
    relevance: float | None = None
    goal: str | None = None
    source: str | None = None
    tags: list[str] = field(default_factory=list)
    access_count: int | None = 0
    last_access: datetime | None = None
    frequency: int | None = 1
    tagged_by: str | None = None
    gate_reason: str | None = None
    replay_score: float | None = None
    decision_reason: str | None = None
    prev_tier: str | None = None
    tier_changed_at: datetime | None = None
    pinned: bool | None = False
    follows: str | None = None  # the turn whose text shaped the vector (:mod:`.threads`)

    @property
    def happened_at(self) -> datetime:
        """When the event it tells happened: ``observed_at``, else when it was written."""
        return self.observed_at or self.created_at

    def moved(self, tier: str, at: datetime, reason: str, **changes: Any) -> Memory:
        """This memory moved to ``tier`` at ``at`` for ``reason``, with any other ``changes``;
        its ``prev_tier`` is the tier it leaves unless ``changes`` say otherwise."""
        changes = {"prev_tier": self.tier, **changes}
        return replace(self, tier=tier, tier_changed_at=at, decision_reason=reason, **changes)

    def columns(self) -> dict[str, Any]:
        """The record as the table's columns, in field order (the export's line format)."""
        return {name: getattr(self, name) for name in MEMORY_FIELDS}


MEMORY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Memory))
