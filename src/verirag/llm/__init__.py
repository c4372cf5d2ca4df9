"""One LLM interface, three backends (llama.cpp, OpenAI-compatible HTTP, HF transformers), one cache."""
from verirag.llm.base import LLM
from verirag.llm.cache import RequestCache
from verirag.llm.cached import CachedLLM
from verirag.llm.factory import load_llm

__all__ = ["LLM", "CachedLLM", "RequestCache", "load_llm"]
