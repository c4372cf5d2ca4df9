"""The OpenAI-compatible HTTP backend (`backend.OpenAICompatibleLLM`), split by concern: client (HTTP,
retries, errors), logprobs (the reply layouts), scoring (echo-based continuation scores), capabilities
(what a server really offers)."""
