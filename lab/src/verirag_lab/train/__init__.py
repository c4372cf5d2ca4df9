"""What `verirag train` and `verirag calibrate(-retrieval)` run: grading answers against gold
(`ground_truth`), labelling, fitting and validating the learned parts of `verirag.learned`."""
