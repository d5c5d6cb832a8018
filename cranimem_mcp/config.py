"""Settings: the only place the environment and configuration files are read.

Precedence, highest first: explicit overrides (CLI flags), ``CRANIMEM_*`` environment
variables (``__`` separates sections, e.g. ``CRANIMEM_GATING__TAU_NOISE=0.2``), the TOML file
given with ``--config`` (or ``$CRANIMEM_HOME/config.toml`` when it exists), then the defaults
below, which ``configs/default.toml`` mirrors line for line (a test keeps them equal).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from cranimem_mcp.errors import ConfigError

MIN_TOKEN_LENGTH = 16  # characters of CRANIMEM_TOKEN
# How long our HTTP servers (`serve --transport http`, a sharing owner's loopback endpoint)
# keep an idle connection open. Longer than any client's pool keeps one (httpx and so the MCP
# SDK: 5 s; Go: 90 s), so the client always drops an idle connection first. At uvicorn's
# default, 5 s, the server could close a connection just as the client reused it: the
# request then failed with "Server disconnected", which ends a whole MCP client session
# (tests/replicas.py).
HTTP_KEEP_ALIVE_SECONDS = 120

DEFAULT_GOAL = (
    "Remember durable facts about the user: their life, preferences, constraints, plans, "
    "work, projects, and the people, places and tools involved."
)


class _Section(BaseModel):
    """A configuration section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class GatingSettings(_Section):
    tau_noise: float = Field(0.15, ge=-1.0, le=1.0)
    second_look: bool = True
    tau_context: float = Field(0.45, ge=-1.0, le=1.0)
    default_goal: str = Field(DEFAULT_GOAL, min_length=1, max_length=2000)
    # A scope whose goal is the default one goes through the default gate: rejected only by a
    # noise rule (gate/noise.py), kept otherwise; a classifier's probability that the write
    # is durable, against this threshold (None: the trained one, in
    # cranimem_mcp/gate/data/default_gate.json), marks what it keeps as doubtful (low
    # importance: replay decides). default_gate = false: the goal-conditioned gate for all.
    default_gate: bool = True
    tau_durable: float | None = Field(None, ge=0.0, le=1.0)
    # Credentials in a write: "redact" stores it with each one replaced by a labelled
    # placeholder, "reject" refuses the write. Never stored verbatim either way.
    secrets: Literal["redact", "reject"] = "redact"


class EpisodicSettings(_Section):
    capacity: int = Field(200, ge=1, le=100_000)
    # Where the table lives: None is <home>/episodic; any LanceDB URI works (s3://bucket/path,
    # gs://..., az://...), with its storage options (credentials, region, endpoint).
    uri: str | None = None
    storage_options: dict[str, str] = {}
    # Live memories mirrored in RAM (hash, vector, text) so writes and recalls skip most
    # LanceDB queries (cranimem_mcp/buffer/working_set.py); a long memory's further windows
    # (windows, below) count one row each; 0 turns the mirror off.
    working_set_rows: int = Field(100_000, ge=0, le=10_000_000)
    # Old table versions (kept for reads in flight): at most this many, none older than
    # keep_versions_seconds; and if the table's folder is still over max_disk_ratio times
    # its live data after that, only the current version is kept.
    keep_versions: int = Field(20, ge=1, le=100_000)
    keep_versions_seconds: float = Field(3600.0, ge=0.0)
    max_disk_ratio: float = Field(3.0, ge=1.0)
    # A transcript turn ("[when] Name: text") is embedded with the write before it in the same
    # session (cranimem_mcp/conversation/threads.py): LoCoMo-dev R@5 0.631 -> 0.676, HotpotQA
    # unchanged.
    thread_turns: bool = True
    # A memory of more than one passage (a few sentences, at most 40 words:
    # cranimem_mcp/backends/passages.py) is stored with its vector and those of up to this
    # many - 1 of its passages (a run without a sentence end longer than the embedder reads,
    # MiniLM's 256 word pieces: its windows), and a recall lifts its score by its best
    # passage's (1 = its own vector only; a change applies to later writes, and `reembed`
    # with the same embedder brings the memories stored before up to it).
    windows: int = Field(32, ge=1, le=64)


class ConsolidationSettings(_Section):
    tau_consolidation: float = Field(0.3, ge=0.0, le=2.0)
    alpha: float = Field(0.5, ge=0.0, le=10.0)
    freq_cap: int = Field(4, ge=1, le=1000)
    every_n_writes: int = Field(20, ge=0, le=100_000)
    interval_seconds: float = Field(300.0, ge=0.0)
    idle_seconds: float = Field(30.0, ge=0.0)
    trash_retention_days: float = Field(30.0, ge=0.0)
    # Which replica may consolidate (docs/SCALING.md, "Replicas"): "local" (this process: the
    # owner lock makes it the only consolidator of its data directory), "sparql" (a lease in
    # the graph's SPARQL server, for replicas sharing it), "auto": sparql when graph.store is.
    lease: Literal["auto", "local", "sparql"] = "auto"
    lease_seconds: float = Field(30.0, ge=1.0, le=3600.0)  # renewed every third while held


class RetrievalSettings(_Section):
    k: int = Field(8, ge=1, le=50)
    max_chars: int = Field(4000, ge=200, le=200_000)
    min_score: float = Field(0.1, ge=-1.0, le=1.0)
    # A line of the context block needs this share of the best memory's score (0 = off): a
    # weak match is left out relative to the best one. At 0.2 and 0.3 every evidence turn
    # LoCoMo-dev and LongMemEval-dev recall in the top 10 stays, and HotpotQA's answer recall
    # (120 questions) too; but a second gold paragraph of tests/data/hotpotqa_mini.json sits
    # at 0.25-0.3 of the best; 0.4 lost 0.05 of HotpotQA's answer recall, 0.5 0.08
    # (docs/RESULTS.md).
    context_ratio: float = Field(0.2, ge=0.0, le=1.0)
    # A query that names a time ("in March", "5 days ago", "on October 13, 2023": recall/when.py)
    # lends the memories of events in that time this share of their score (0 = off).
    date_boost: float = Field(0.0, ge=0.0, le=5.0)
    # A query about two things ("the oil change and the car wash", "A or B first?")
    # searches each part too; a memory scores its best (recall/parts.py). Off: LongMemEval-dev
    # gains 2 of 40 questions, LoCoMo-dev none, HotpotQA-120 loses one (docs/RESULTS.md).
    split_queries: bool = False
    # How the vector and full-text halves of the episodic search are fused: reciprocal rank
    # ("rrf", LanceDB's default) or a weighted sum of normalised scores ("linear", LanceDB's
    # LinearCombinationReranker) with this share for the vector half.
    # "lift": each candidate's cosine plus text_lift times its share of the best full-text
    # score (cranimem_mcp/buffer/fusion.py): a score on the cosine's scale that ranks.
    fusion: Literal["rrf", "linear", "lift"] = "linear"
    vector_weight: float = Field(0.7, ge=0.0, le=1.0)
    text_lift: float = Field(0.2, ge=0.0, le=1.0)
    hops: int = Field(2, ge=0, le=3)
    max_facts: int = Field(24, ge=0, le=500)
    # Re-scoring of the episodic candidates (cranimem_mcp/conversation/rerank.py): candidates
    # fetched per
    # memory returned, the lift of a turn whose speaker the query names, the share of a hit's
    # score lent to the turns beside it in the same session (0 turns each off).
    # Off by default: on LoCoMo-dev pool 3, vector_weight 0.5 and neighbour_weight 0.3 lift
    # R@5 0.569 -> 0.613, but lost a net 1 of 30 HotpotQA questions (docs/RESULTS.md).
    pool: int = Field(1, ge=1, le=10)
    speaker_boost: float = Field(0.0, ge=0.0, le=1.0)
    neighbour_weight: float = Field(0.0, ge=0.0, le=1.0)
    # The hours of a session: the neighbours above must have happened this close (their
    # event times); the turn a turn follows (episodic.thread_turns) must be this close by
    # its stamp's date or, unstamped, its write time (cranimem_mcp/transcript.follows).
    session_hours: float = Field(1.0, gt=0.0)
    # Speaker-centred recall (cranimem_mcp/conversation/speakers.py): a name heading at least this
    # many
    # memories of the scope ("[when] Name: text") is a speaker; a query naming one searches
    # without the name, the speaker's own turns first (0 = off). Those turns are re-scored
    # with their own pool and neighbour weight: only transcripts reach this branch.
    speaker_turns: int = Field(3, ge=0)
    speaker_pool: int = Field(2, ge=1, le=10)
    speaker_neighbour_weight: float = Field(0.3, ge=0.0, le=1.0)
    graph_resource_max_triples: int = Field(2000, ge=1)


class TemporalSettings(_Section):
    # One value at a time for a person: a new one ends the old. Not preferences, likes,
    # languages or allergies: they accumulate ("I prefer metric units" ends no "I prefer
    # dark mode"), unless the sentence states a change ("these days", "since 2019": the
    # extractor marks that relation functional itself).
    functional_predicates: list[str] = [
        "lives_in",
        "works_at",
        "based_in",
        "has_manager",
        "has_partner",
        "has_age",
        "has_job_title",
    ]
    half_life_days: float = Field(180.0, ge=0.0)
    longterm_capacity: int = Field(5000, ge=1, le=10_000_000)


class ModelSettings(_Section):
    # "auto": Ollama when it answers at startup (and has the model), else the local fallback.
    embedder: Literal["auto", "ollama", "local"] = "auto"
    # all-MiniLM-L6-v2 runs on onnxruntime; any other name or path on sentence-transformers
    # (the optional extra).
    embedder_model: str = "all-MiniLM-L6-v2"
    tagger: Literal["auto", "ollama", "heuristic"] = "auto"
    extractor: Literal["auto", "ollama", "heuristic"] = "auto"
    # Threads of the local embedder (onnxruntime intra-op, or torch). "torch_threads", its
    # name before the embedder left torch, is still read.
    threads: int = Field(1, ge=1, le=64, validation_alias=AliasChoices("threads", "torch_threads"))


class OllamaSettings(_Section):
    """The Ollama backend. ``host`` None follows the ollama client: ``OLLAMA_HOST``, else
    http://127.0.0.1:11434."""

    host: str | None = None
    embed_model: str = "all-minilm"
    tagger_model: str = "qwen2.5-coder:1.5b"
    extractor_model: str = "qwen2.5-coder:1.5b"
    timeout_seconds: float = Field(30.0, gt=0.0, le=3600.0)
    probe_timeout_seconds: float = Field(1.5, gt=0.0, le=60.0)
    cooldown_seconds: float = Field(30.0, ge=0.0)
    keep_alive: str = "10m"
    concurrency: int = Field(2, ge=1, le=64)
    num_ctx: int = Field(4096, ge=512, le=131_072)
    embed_batch_size: int = Field(32, ge=1, le=1024)
    extract_batch_size: int = Field(4, ge=1, le=32)
    max_calls_per_consolidation: int = Field(24, ge=0, le=10_000)


class ServerSettings(_Section):
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    allow_remote: bool = False
    owner_wait_seconds: float = Field(30.0, ge=0.0, le=3600.0)


class ScopeSettings(_Section):
    """Which scope a call that names none goes to."""

    default: str = Field("default", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    from_roots: bool = True


class GraphSettings(_Section):
    """Where the knowledge graph lives: "local" (rdflib in memory, journaled under <home>/graph)
    or "sparql" (any SPARQL 1.1 server, through rdflib's SPARQLUpdateStore)."""

    store: Literal["local", "sparql"] = "local"
    query_endpoint: str | None = None
    update_endpoint: str | None = None


def ollama_host_from_env() -> str | None:
    """``OLLAMA_HOST``: the ollama client reads it itself when ``ollama.host`` is unset; it is
    read here only to tell whether the user pointed us at an Ollama of their choosing."""
    return os.environ.get("OLLAMA_HOST") or None


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("cranimem-mcp", appauthor=False))


class Settings(BaseSettings):
    """Every threshold and size of the server; read once at the entry point, passed down."""

    model_config = SettingsConfigDict(
        env_prefix="CRANIMEM_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    home: Path = Field(default_factory=default_home)
    # The HTTP bearer token: long enough not to be guessed; unset, one is generated.
    token: str | None = Field(None, min_length=MIN_TOKEN_LENGTH, repr=False)
    gating: GatingSettings = GatingSettings()
    episodic: EpisodicSettings = EpisodicSettings()
    consolidation: ConsolidationSettings = ConsolidationSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    temporal: TemporalSettings = TemporalSettings()
    models: ModelSettings = ModelSettings()
    ollama: OllamaSettings = OllamaSettings()
    server: ServerSettings = ServerSettings()
    scopes: ScopeSettings = ScopeSettings()
    graph: GraphSettings = GraphSettings()

    @field_validator("home")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the TOML file named by ``_config_path`` (set by :func:`load_settings`)."""

    path: Path | None = None

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _TomlSource.path
        if path is None:
            return {}
        try:
            with path.open("rb") as fh:
                return tomllib.load(fh)
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Build the one Settings object: overrides > env > TOML file > defaults."""
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if config is None:
        home = overrides.get("home") or os.environ.get("CRANIMEM_HOME") or default_home()
        candidate = Path(home).expanduser() / "config.toml"
        config = candidate if candidate.is_file() else None
    _TomlSource.path = Path(config).expanduser() if config else None
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc)) from exc
    finally:
        _TomlSource.path = None


def _one_line(exc: ValidationError) -> str:
    """The configuration's problems in one line, each named by its setting and environment
    variable; never a value (the token is a secret)."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        if loc == ["token"] and error["type"] == "string_too_short":
            problems.append(
                f"CRANIMEM_TOKEN must be at least {MIN_TOKEN_LENGTH} characters long (it has "
                f"{len(error['input'])}); unset it to have one generated"
            )
            continue
        env = "CRANIMEM_" + "__".join(loc).upper()
        problems.append(f"{'.'.join(loc)} ({env}): {error['msg']}")
    return "invalid configuration: " + "; ".join(problems)
