#!/usr/bin/env bash
# The folder of multi-hop questions with supporting sentences that the `hotpotqa_support` labelling
# source reads ($VERIRAG_HOTPOTQA_SUPPORT; lab/src/verirag_lab/train/verifier_labels/hotpotqa_support.py),
# made from the public snapshots below at pinned commits. The files are read by path, never copied
# into this repository. Their data's licences: HotpotQA CC BY-SA 4.0, 2WikiMultihopQA Apache-2.0,
# MuSiQue CC BY 4.0.
#
#   scripts/make_support_folder.sh OUT [all|ecm]    clones each repository from GitHub (needs git and network)
#   MIRRORS=DIR scripts/make_support_folder.sh OUT  reads bare copies at DIR/<owner>+<name>/repo instead
#
# `ecm`: files 1-2 only, the folder until 2026-12-02. The committed own-answer set of this source
# (data/verifier/own_answers/own-answers-support-qwen2.5-1.5b) drew its distractors by BM25 over that
# folder's paragraphs, so `benchmarks/own_answers_support.py` rebuilds its passages from it alone.
# `all` (the default) adds HotpotQA, 2WikiMultihopQA and MuSiQue questions (support_rows.py reads
# their formats); records of the distillation made from `ecm` read back the same from `all`. The
# loader leaves out the shared HotpotQA file's questions and repeated questions, so overlaps between
# these files are harmless.
set -euo pipefail
out=${1:?usage: make_support_folder.sh OUT [all|ecm]}
which=${2:-all}
[[ "$which" == all || "$which" == ecm ]] || { echo "make_support_folder.sh: all or ecm, not $which" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

FILES=(
  # repository commit path name-in-folder
  "LightChen233/ECM aac9ae2f22e312fac2de44f20e4227922649b5f4 data/hotpotqa/train.jsonl train.jsonl"
  "LightChen233/ECM aac9ae2f22e312fac2de44f20e4227922649b5f4 data/hotpotqa/test.json test.json"
  "megagonlabs/RPT cf2bc1b1b4edd0318b84179e732ec476c4e20a6e data/hotpotqa/train.jsonl rpt-hotpotqa-train.jsonl"
  "megagonlabs/RPT cf2bc1b1b4edd0318b84179e732ec476c4e20a6e data/hotpotqa/dev.jsonl rpt-hotpotqa-dev.jsonl"
  "megagonlabs/RPT cf2bc1b1b4edd0318b84179e732ec476c4e20a6e data/hotpotqa/test.jsonl rpt-hotpotqa-test.jsonl"
  "AdelWang/MIGRES 1de6265c9ca1014054d6ba875738e785830908f8 data/wikihop_train_preprocess.json migres-2wiki-train.json"
  "AdelWang/MIGRES 1de6265c9ca1014054d6ba875738e785830908f8 data/wikihop.json migres-2wiki-dev.jsonl"
  "AdelWang/MIGRES 1de6265c9ca1014054d6ba875738e785830908f8 data/musique.json migres-musique-dev.jsonl"
  "AdelWang/MIGRES 1de6265c9ca1014054d6ba875738e785830908f8 data/hotpot.json migres-hotpotqa-dev.jsonl"
  "OSU-NLP-Group/HippoRAG 3d95d255a8db0c1699b853cfb4fbe5056708162d data/hotpotqa_train.json hipporag-hotpotqa-train.json"
  "OSU-NLP-Group/HippoRAG 3d95d255a8db0c1699b853cfb4fbe5056708162d data/musique_train.json hipporag-musique-train.json"
)

repo_dir() {  # a git directory holding the repository's history
  local repo=$1 commit=$2
  if [[ -n "${MIRRORS:-}" ]]; then
    echo "$MIRRORS/${repo/\//+}/repo"
    return
  fi
  local dir="$tmp/${repo/\//+}"
  if [[ ! -d "$dir" ]]; then
    git clone --quiet --bare --filter=blob:none "https://github.com/$repo" "$dir" >&2
  fi
  echo "$dir"
}

wanted=()
for line in "${FILES[@]}"; do
  read -r repo _ _ name <<<"$line"
  [[ "$which" == all || "$repo" == LightChen233/ECM ]] && wanted+=("$name")
done
# the loader reads every file of the folder: another file there would change what it reads
for f in "$out"/*; do
  [[ -e "$f" && "$f" != *.part ]] || continue  # a copy a killed run left: written again below
  [[ " ${wanted[*]} " == *" $(basename "$f") "* ]] || { echo "$out holds $(basename "$f"), not one of the $which files: give an empty folder" >&2; exit 2; }
done

for line in "${FILES[@]}"; do
  read -r repo commit path name <<<"$line"
  [[ "$which" == all || "$repo" == LightChen233/ECM ]] || continue
  dir=$(repo_dir "$repo" "$commit")
  # written whole or not at all: the loader reads every .json/.jsonl file, so a killed copy must not stay one
  if ! git -C "$dir" show "$commit:$path" >"$out/$name.part" || [[ ! -s "$out/$name.part" ]]; then
    rm -f "$out/$name.part"
    echo "make_support_folder.sh: could not read $repo@${commit:0:7}:$path from $dir" >&2
    exit 1
  fi
  mv "$out/$name.part" "$out/$name"
  echo "$out/$name  <- $repo@${commit:0:7}:$path"
done
