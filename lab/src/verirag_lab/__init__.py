"""verirag's lab: what researchers run and users of the product never call (experiment grids and
paper studies, benchmark loaders, label recipes, training of the learned parts, the rule that picks
defaults). It depends on the product, `verirag`, and the product never on it: `verirag` alone is
the product's wheel."""
