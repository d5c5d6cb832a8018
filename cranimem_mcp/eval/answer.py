"""The optional answer step (``--answer-model``): a local LLM answers the question from the
recalled context through Ollama, so the paper's answer precision/recall/F1 can be reported.

The prompt lives in ``hotpotqa_answer.txt`` beside this module (``{context}`` and ``{question}``
are filled in); decoding is greedy so reruns agree.
"""

from __future__ import annotations

from pathlib import Path

from cranimem_mcp.errors import BackendUnavailable, ConfigError

PROMPT = Path(__file__).parent / "hotpotqa_answer.txt"


def load_prompt(path: Path = PROMPT) -> str:
    try:
        template = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the answer prompt {path}: {exc}") from exc
    if "{context}" not in template or "{question}" not in template:
        raise ConfigError(f"the answer prompt {path} needs {{context}} and {{question}}")
    return template


class OllamaAnswerer:
    """``await answerer(question, context) -> answer`` through an Ollama server."""

    def __init__(
        self, model: str, host: str | None = None, timeout: float = 120.0, prompt: str = ""
    ) -> None:
        import ollama

        self._client = ollama.AsyncClient(host=host, timeout=timeout)
        self._model = model
        self._template = prompt or load_prompt()

    async def __call__(self, question: str, context: str) -> str:
        import httpx
        import ollama

        prompt = self._template.replace("{context}", context).replace("{question}", question)
        try:
            reply = await self._client.generate(
                model=self._model, prompt=prompt, options={"temperature": 0, "num_predict": 48}
            )
        except (ConnectionError, httpx.HTTPError, ollama.ResponseError) as exc:
            raise BackendUnavailable(f"answer model {self._model} failed: {exc}") from exc
        text = reply.response.strip().splitlines()
        return text[0].strip() if text else ""
