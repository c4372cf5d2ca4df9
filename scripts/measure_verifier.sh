#!/usr/bin/env bash
# Measure a trained verifier everywhere the shipped one is measured, without an LLM call, and write
# its scores beside the shipped one's (ids, kinds and scores; no benchmark text), so that
# `python benchmarks/cascade.py --verifier NAME` and the per-set benchmarks compare the two paired:
#
#   dev set (instruct_qa_human's HotpotQA and TopiOCQA rows)  data/verifier/dev_scores/whole/verifier-NAME.jsonl
#   the man pages (the held-out kind of document)             data/verifier/heldout_docs/verifier-NAME.jsonl
#   own answers (the committed held-out runs, the sets of 300) data/verifier/own_answers/RUN/verifier-NAME.jsonl
#     (with SUPPORT_ECM / SUPPORT_ALL: also the clean multi-hop sets, see below)
#   changed numbers, parties, negations                       data/verifier/swaps/verifier-NAME{,-own,-manpages}.jsonl
#   made-up checks (bridges, follow-ups, licences)            data/verifier/made_up/verifier-NAME.json
#
# Usage: VERIRAG_DATA_DIR=../shared/data bash scripts/measure_verifier.sh NAME DIR
# (DIR: a verifier folder, `verirag train verifier --out DIR`). SOFTMIN=T scores every answer with
# that answer rule (0: the plain minimum of its sentences, as the shipped verifier's committed scores
# of the dev set, the man pages and the own answers were made) instead of today's default, so a
# candidate compares with those files under one rule. Each step skips what is written;
# about 15-25 minutes on 2 cores. The dev set and the man pages are evaluation data: this measures,
# it never trains or tunes anything.
set -euo pipefail
name=${1:?usage: measure_verifier.sh NAME DIR}
dir=${2:?usage: measure_verifier.sh NAME DIR}
[ -d "$dir" ] || { echo "measure_verifier.sh: $dir is not a verifier folder" >&2; exit 1; }
: "${VERIRAG_DATA_DIR:?set VERIRAG_DATA_DIR to the shared data folder}"
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
verirag=${VERIRAG:-.venv/bin/verirag}
method="vanilla+verifier(verifier=$dir${SOFTMIN:+, softmin=$SOFTMIN})"
rescore_rule=(${SOFTMIN:+--softmin "$SOFTMIN"})
work=runs/measure/$name
mkdir -p "$work"

[ -f runs/verifier_dev/dev.jsonl ] || $py benchmarks/verifier_dev.py log --out runs/verifier_dev/dev.jsonl
# the man pages' claims: their compact labels first where this checkout has none (a fresh machine),
# made under another name and moved, so a killed labelling (it resumes) is never sampled half-written
docs_labels=runs/labels/issue36-docs.heldout.jsonl
if [ ! -f runs/heldout_docs/log.jsonl ] && [ ! -f $docs_labels ]; then
  $verirag label verifier --models none --recipes doc_claims --datasets docs --n 1000 --split heldout \
    --out $docs_labels.part
  mv $docs_labels.part $docs_labels
fi
[ -f runs/heldout_docs/log.jsonl ] || $py benchmarks/heldout_docs.py log --n 150 --out runs/heldout_docs/log.jsonl

$verirag verify runs/verifier_dev/dev.jsonl --label-field label --method "$method" --out "$work/dev"
$py benchmarks/verifier_dev.py export "$work/dev" --out "data/verifier/dev_scores/whole/verifier-$name.jsonl"

$verirag verify runs/heldout_docs/log.jsonl --label-field label --method "$method" --out "$work/docs"
$py benchmarks/heldout_docs.py export "$work/docs" --out "data/verifier/heldout_docs/verifier-$name.jsonl"

for run in held-out-qwen2.5-1.5b held-out-nq2-qwen2.5-1.5b held-out-nli-qwen2.5-1.5b \
  own-answers-verifier-qwen2.5-1.5b own-answers-nq-verifier-qwen2.5-1.5b own-answers-followup-verifier-qwen2.5-1.5b \
  own-answers-pruned-qwen2.5-1.5b own-answers-nq-pruned-qwen2.5-1.5b own-answers-followup-pruned-qwen2.5-1.5b; do
  $py benchmarks/rescore_own_answers.py "data/verifier/own_answers/$run" --verifier "$dir" "${rescore_rule[@]}" \
    --out "data/verifier/own_answers/$run/verifier-$name.jsonl"
done

# The clean multi-hop sets (hotpotqa_support's held-out questions), each rebuilt from its own folder:
# SUPPORT_ECM=DIR (scripts/make_support_folder.sh DIR ecm) for the first, SUPPORT_ALL=DIR (... DIR all)
# for the second. The first set's passage ids were renamed by the key migration of 2026-12-01 after it
# ran, so no rebuilt example gives its recorded generation key (--no-key-check); its texts do: the
# shipped verifier rescored on them gives the committed scores exactly (max |diff| 0, 2026-12-02).
support_set() {  # RUN FOLDER [rescore options]
  local run=$1 folder=$2 examples
  shift 2
  examples=runs/${run%-qwen2.5-1.5b}/examples.jsonl
  VERIRAG_HOTPOTQA_SUPPORT=$folder $py benchmarks/own_answers_support.py --out "$examples" \
    ${SKIP_RUN:+--skip-run "$SKIP_RUN"}
  $py benchmarks/rescore_own_answers.py "data/verifier/own_answers/$run" --verifier "$dir" "${rescore_rule[@]}" "$@" \
    --out "data/verifier/own_answers/$run/verifier-$name.jsonl"
}
if [ -n "${SUPPORT_ECM:-}" ]; then
  support_set own-answers-support-qwen2.5-1.5b "$SUPPORT_ECM" --no-key-check
fi
if [ -n "${SUPPORT_ALL:-}" ] && [ -f data/verifier/own_answers/own-answers-support2-qwen2.5-1.5b/results.jsonl ]; then
  SKIP_RUN=data/verifier/own_answers/own-answers-support-qwen2.5-1.5b support_set own-answers-support2-qwen2.5-1.5b "$SUPPORT_ALL"
fi

$py benchmarks/verifier_swaps.py --method "$method" --out "data/verifier/swaps/verifier-$name.jsonl"
$py benchmarks/verifier_swaps.py --method "$method" --own data/verifier/own_answers/held-out-nli-qwen2.5-1.5b \
  --out "data/verifier/swaps/verifier-$name-own.jsonl"
$py benchmarks/verifier_swaps.py --method "$method" --log runs/heldout_docs/log.jsonl \
  --out "data/verifier/swaps/verifier-$name-manpages.jsonl"
$py benchmarks/verifier_made_up.py --method "$method" --json "data/verifier/made_up/verifier-$name.json"
