"""Learned parts on one contract (`verirag.learned.base.LearnedPart`: fit, check_fitted,
save / load with a format tag, provenance and fingerprints, one mismatch rule):

- `threshold`: the threshold controller (fixed value, target precision by Learn then Test,
  action rate), cross-validated thresholds, the threshold files of `verirag calibrate`;
- `trust_filter`: the conformal trust filter on retrieval (`verirag calibrate-retrieval`);
- `lookback_classifier`: the factuality classifier over lookback ratios (`verirag train lookback`);
- `forecaster`: CalibRAG's f(q, d), as a cross-encoder or a probe (`verirag train forecaster`);
- `verifier`: the trained verifier, a cross-encoder judging each answer sentence against passage
  chunks, saved as a small adapter over the packaged encoder (`verirag train verifier`);
- `splits`: the one split by question group.

What fits them from data (labelling, training reports) is `verirag_lab.train`.
"""
