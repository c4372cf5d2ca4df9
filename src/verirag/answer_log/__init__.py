"""Verify the answers another RAG system logged (`verirag verify LOG.jsonl --out DIR`).

    from verirag import Pipeline
    from verirag.answer_log import verify_log
    done = verify_log(Pipeline.from_preset("local"), "ragas_log.jsonl", "out/")   # field names detected
    done.summary, done.report

- `verify_log`: the whole of it in one call (what the CLI and `verirag.evaluate` run).
- `formats`: the log's lines as entries (malformed ones kept, with line number and reason).
- `run`: one JSON line per answer in OUT/results.jsonl as it is done; a rerun resumes.
- `ray_shards`: the same blocks verified by Ray actors (`verify_log(..., executor="ray")`).
- `summary`: share supported, score distribution, failures; AUROC, PR-AUC, precision and recall
  with bootstrap intervals against labels or references (OUT/summary.json).
- `report`: OUT/report.html, the flagged answers first.
- `passages`: the passages of one answer (`verirag verify --question Q --answer A --passages ...`).
"""

from verirag.answer_log.formats import FORMATS, AnswerLog, LogEntry, LogFields, read_answer_log
from verirag.answer_log.passages import read_passages
from verirag.answer_log.run import EXECUTORS, RESULTS_FILE, LogRun, run_log
from verirag.answer_log.summary import SUMMARY_FILE, summarize, summary_lines, write_summary
from verirag.answer_log.verify_log import VerifiedLog, verify_log

__all__ = [
    "EXECUTORS",
    "FORMATS",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "AnswerLog",
    "LogEntry",
    "LogFields",
    "LogRun",
    "VerifiedLog",
    "read_answer_log",
    "read_passages",
    "run_log",
    "summarize",
    "summary_lines",
    "verify_log",
    "write_summary",
]
