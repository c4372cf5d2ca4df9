"""One LLM interface, three backends (llama.cpp, OpenAI-compatible HTTP, HF transformers), one cache."""

from verirag.llm.base import LLM
from verirag.llm.cache import RequestCache
from verirag.llm.cached import CachedLLM
from verirag.llm.factory import load_llm
from verirag.llm.metered import MeteredLLM
from verirag.llm.usage import Usage, metering
from verirag.llm.wrapper import LLMWrapper

__all__ = ["LLM", "CachedLLM", "LLMWrapper", "MeteredLLM", "RequestCache", "Usage", "load_llm", "metering"]
