"""Optional adapters for the RAG frameworks users already run, one module each, installed as extras:
`verirag.integrations.langchain` (`pip install verirag[langchain]`) and
`verirag.integrations.llamaindex` (`pip install verirag[llamaindex]`).

Nothing is imported here, so `import verirag` never needs a framework; verirag's core never imports one.
"""
