"""What both the library and the lab use to judge answers and show the judgement: the AwF ground
truth and its match rules (`ground_truth`), and the one self-contained HTML page writer (`page`).

It sits between the answer core and the lab: the log verifier (`verirag verify`) and the
experiment harness both import it, so neither has to import the other. It depends only on
`metrics` and `types` (matplotlib for `page.to_png`)."""
