"""Evaluation metrics: pure functions over strings and arrays, vectorised with numpy.

- `qa`: correctness against reference answers (EM, token F1 / precision / recall, recall-strict,
  substring match, ROUGE-L, METEOR, BERTScore), instruct-qa definitions.
- `faithfulness`: K-Precision / K-Recall / K-F1 (and ++), K-BERTScore.
- `abstention`: "I don't know" detection, P_IR, P_G.
- `awf`: AwF precision / recall / F1, curves, best F1, PR-AUC, QPP variants.
- `calibration`: ECE, Brier, NLL, AUROC, reliability diagrams, %NA.
- `stats`: bootstrap intervals, Spearman / Kendall tau-b, metric-human correlation tables,
  conformal quantile. (The precision-guarantee threshold, Learn then Test, lives in
  `verirag.learned.threshold`: metrics depend on nothing of ours.)
- `judges`: reading an LLM judge's verdict (the judges, which call an LLM: `verirag.evaluation.judges`).

Each function states its formula in its docstring.
"""

from verirag.metrics.abstention import abstention_mask, is_abstention, p_g, p_ir
from verirag.metrics.awf import (
    AwFCurve,
    AwFScores,
    BestF1,
    awf_curve,
    awf_f1,
    awf_precision,
    awf_recall,
    awf_scores,
    best_f1,
    best_f1_statistic,
    f1_statistic,
    hard_pr_auc_statistic,
    pr_auc,
    pr_auc_statistic,
    qpp_curve,
    qpp_f1,
    qpp_precision,
    qpp_recall,
    random_pr_auc,
    recall_decomposition,
)
from verirag.metrics.calibration import (
    ReliabilityDiagram,
    abstention_rate,
    auroc,
    brier,
    ece,
    nll,
    reliability_diagram,
)
from verirag.metrics.faithfulness import (
    k_bertscore,
    k_bertscore_batch,
    k_f1,
    k_f1_pp,
    k_metrics_batch,
    k_precision,
    k_precision_pp,
    k_recall,
    k_recall_pp,
)
from verirag.metrics.qa import (
    BertScore,
    BertScorer,
    bertscore,
    bertscore_batch,
    exact_match,
    exact_match_batch,
    get_tokens,
    meteor,
    meteor_batch,
    normalize_answer,
    recall_strict,
    recall_strict_batch,
    rouge_l,
    rouge_l_batch,
    substring_match,
    substring_match_batch,
    token_f1,
    token_f1_batch,
    token_metrics_batch,
    token_precision,
    token_precision_batch,
    token_recall,
    token_recall_batch,
)
from verirag.metrics.stats import (
    BootstrapResult,
    CorrelationTable,
    bootstrap_ci,
    conformal_quantile,
    group_bootstrap_intervals,
    kendall_tau_b,
    metric_human_correlation,
    rankdata,
    spearman,
)

__all__ = [n for n in dir() if not n.startswith("_")]
