"""verirag inside the RAG frameworks users already run (optional extras: langchain, llamaindex)."""
