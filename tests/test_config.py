"""Configuration: defaults, the TOML file, environment overrides."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cranimem_mcp.config import Settings, load_settings
from cranimem_mcp.errors import ConfigError

DEFAULT_TOML = Path(__file__).parent.parent / "configs" / "default.toml"


def test_configs_default_toml_equals_the_built_in_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("CRANIMEM_HOME", raising=False)
    from_file = load_settings(DEFAULT_TOML, home=tmp_path).model_dump()
    built_in = Settings(home=tmp_path).model_dump()
    assert from_file == built_in
    # ... and the file names every setting of every section (TOML has no null: settings
    # that default to None are shown commented out).
    text = DEFAULT_TOML.read_text()
    data = tomllib.loads(text)
    for section, values in built_in.items():
        if isinstance(values, dict):
            assert set(data[section]) == {k for k, v in values.items() if v is not None}
            for key in (k for k, v in values.items() if v is None):
                assert f"# {key} =" in text, (section, key)


def test_environment_overrides_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("CRANIMEM_GATING__TAU_NOISE", "0.33")
    monkeypatch.setenv("CRANIMEM_HOME", str(tmp_path / "h"))
    settings = load_settings(DEFAULT_TOML)
    assert settings.gating.tau_noise == 0.33
    assert settings.home == tmp_path / "h"


def test_home_config_toml_is_read(monkeypatch, tmp_path):
    monkeypatch.setenv("CRANIMEM_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text("[episodic]\ncapacity = 7\n")
    assert load_settings().episodic.capacity == 7


@pytest.mark.parametrize(
    "text",
    ["[episodic]\ncapacity = 0\n", "[gating]\nunknown = 1\n", "not toml ["],
)
def test_bad_config_is_a_clear_error(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError):
        load_settings(path, home=tmp_path)


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml", home=tmp_path)


def test_the_old_name_torch_threads_still_sets_the_embedder_threads(monkeypatch, tmp_path):
    path = tmp_path / "old.toml"
    path.write_text("[models]\ntorch_threads = 3\n")
    assert load_settings(path, home=tmp_path).models.threads == 3
    monkeypatch.setenv("CRANIMEM_MODELS__TORCH_THREADS", "2")
    assert load_settings(home=tmp_path).models.threads == 2
    monkeypatch.setenv("CRANIMEM_MODELS__THREADS", "4")
    monkeypatch.delenv("CRANIMEM_MODELS__TORCH_THREADS")
    assert load_settings(home=tmp_path).models.threads == 4


def test_a_bad_setting_is_one_line_naming_its_variable_and_never_the_token(monkeypatch, tmp_path):
    monkeypatch.setenv("CRANIMEM_SERVER__PORT", "eighty")
    monkeypatch.setenv("CRANIMEM_TOKEN", "s3cret-short")
    with pytest.raises(ConfigError) as caught:
        load_settings(home=tmp_path)
    message = str(caught.value)
    assert "\n" not in message and "pydantic" not in message
    assert "server.port (CRANIMEM_SERVER__PORT): Input should be a valid integer" in message
    assert "CRANIMEM_TOKEN must be at least 16 characters long (it has 12)" in message
    assert "s3cret" not in message


def test_the_consolidation_lease_follows_the_graph_store_unless_named(tmp_path):
    from cranimem_mcp.graph.lease import LocalLease, SparqlLease, consolidation_lease

    def lease(kind: str, store: str, endpoint: str | None = None):
        return consolidation_lease(kind, store, endpoint, endpoint, 30.0, lambda *_: None)

    assert isinstance(lease("auto", "local"), LocalLease)
    assert isinstance(lease("auto", "sparql", "http://127.0.0.1:1/q"), SparqlLease)
    assert isinstance(lease("local", "sparql", "http://127.0.0.1:1/q"), LocalLease)
    with pytest.raises(ConfigError, match="needs graph.query_endpoint"):
        lease("sparql", "local")
