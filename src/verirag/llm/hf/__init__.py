"""The HF transformers backend (`backend.TransformersLLM`), split by concern: load (checkpoints, GGUF
converted once), attention (attention maps, lookback sums), backend (prompts, generation, scoring)."""
