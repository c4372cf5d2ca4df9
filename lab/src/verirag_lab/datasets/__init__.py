"""Benchmark loaders -> `verirag.types.Example`, each in the module named after its dataset.

    from verirag_lab.datasets import load_dataset, dataset_names
    examples = load_dataset("hotpotqa", n=100, seed=0)        # 200 twin examples, from $VERIRAG_DATA_DIR
    examples = load_dataset("nq", n=200, k=5, retriever="bm25")
    examples = load_dataset("jsonl", "my_benchmark.jsonl")

Built from the benchmark files in the AwF paper's ways: nq, hotpotqa, nomiracl, instruct_qa_human.
Original formats, for users who have those files: nq_open, hotpotqa_original, topiocqa, squad2,
bioasq, and jsonl (a generic format). No loader reaches the network.
"""

from .registry import data_dir, dataset_info, dataset_names, load_dataset

__all__ = ["data_dir", "dataset_info", "dataset_names", "load_dataset"]
