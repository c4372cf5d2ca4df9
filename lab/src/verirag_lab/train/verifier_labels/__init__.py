"""Labelled data for the trained verifier, made here from the benchmarks (issue 27, part 1).

    from verirag_lab.train.verifier_labels import label_verifier, resolve_file
    run = label_verifier("labels.jsonl", datasets=["nq", "hotpotqa"], n=100, models=["smollm2-135m"])
    examples = resolve_file("labels.jsonl")      # -> [VerifierExample]

Recipes: one small module each, listed in `run.RECIPES` (real, swap, evidence_removal, local_edit,
evidence_sentence, multihop, followup, doc_claims, paraphrase, distill, choice). The labels file holds
ids, generated text, labels and provenance, never benchmark text (`records`); `resolve` reads the
text back from the data folder. Every instruct_qa_human question is kept out (`exclusion`).
"""

from verirag_lab.train.verifier_labels.records import read_records
from verirag_lab.train.verifier_labels.resolve import resolve, resolve_file
from verirag_lab.train.verifier_labels.run import (
    DEFAULT_DATASETS,
    DEFAULT_MODELS,
    RECIPES,
    LabelRun,
    label_verifier,
    summarise,
)

__all__ = [
    "DEFAULT_DATASETS",
    "DEFAULT_MODELS",
    "RECIPES",
    "LabelRun",
    "label_verifier",
    "read_records",
    "resolve",
    "resolve_file",
    "summarise",
]
