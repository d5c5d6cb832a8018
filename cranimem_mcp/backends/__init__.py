"""Models: the embedders, the LLM protocols and the Ollama backend."""
