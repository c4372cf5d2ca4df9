"""Verify the answers another RAG system logged (`verirag verify LOG.jsonl --out DIR`).

    from verirag import Pipeline
    from verirag.answer_log import read_answer_log, run_log, write_summary
    log = read_answer_log("ragas_log.jsonl")            # RAGAS / DeepEval field names, detected
    run = run_log(Pipeline.from_preset("local", method="vanilla+nli"), log, "out/")
    summary, report = write_summary(log, run.records, "out/")

- `formats`: the log's lines as entries (malformed ones kept, with line number and reason).
- `run`: one JSON line per answer in OUT/results.jsonl as it is done; a rerun resumes.
- `summary`: share supported, score distribution, failures; AUROC, PR-AUC, precision and recall
  with bootstrap intervals against labels or references (OUT/summary.json).
- `report`: OUT/report.html, the flagged answers first.
- `passages`: the passages of one answer (`verirag verify --question Q --answer A --passages ...`).
"""

from verirag.answer_log.formats import FORMATS, AnswerLog, LogEntry, LogFields, read_answer_log
from verirag.answer_log.passages import read_passages
from verirag.answer_log.run import RESULTS_FILE, LogRun, run_log
from verirag.answer_log.summary import SUMMARY_FILE, summarize, summary_lines, write_summary

__all__ = [
    "FORMATS",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "AnswerLog",
    "LogEntry",
    "LogFields",
    "LogRun",
    "read_answer_log",
    "read_passages",
    "run_log",
    "summarize",
    "summary_lines",
    "write_summary",
]
