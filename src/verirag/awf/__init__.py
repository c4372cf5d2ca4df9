"""Answering with faithfulness: generators, entailment backends, predictors, policies, the pipeline."""
