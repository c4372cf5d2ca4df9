#!/usr/bin/env bash
# Install the WordNet 3.0 corpus for nltk (METEOR's synonym stage) without any download from nltk.
#
# nltk's downloader needs the network; Debian packages the same database: `wordnet-base` (data,
# index and exception files) and `wordnet-sense-index` (index.sense, cntlist). nltk reads them once
# they are COPIED (not symlinked) into <nltk_data>/corpora/wordnet/ together with a `lexnames`
# file, which the Debian packages lack; it is the fixed list of the 45 lexicographer files of
# WordNet 3.0 (see lexnames(5WN)) and is written below.
#
# Usage: bash scripts/install_wordnet.sh PYTHON      (idempotent; root or passwordless sudo is
# needed only when the Debian packages are missing). The corpus goes to <venv>/nltk_data, which
# nltk searches by default (sys.prefix/nltk_data); NLTK_DATA_DIR=... overrides the target.
set -euo pipefail
PY=${1:?usage: install_wordnet.sh PYTHON}
PREFIX=$("$PY" -c 'import sys; print(sys.prefix)')
ROOT=${NLTK_DATA_DIR:-$PREFIX/nltk_data}
DEST=$ROOT/corpora/wordnet
SRC=${WORDNET_SRC:-/usr/share/wordnet}
STAMP=$DEST/.verirag-wordnet-3.0

if [ -f "$STAMP" ]; then
  exit 0
fi

if [ ! -f "$SRC/data.noun" ] || [ ! -f "$SRC/index.sense" ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      SUDO="sudo -n"
    else
      echo "install_wordnet.sh: the Debian packages wordnet-base and wordnet-sense-index are missing" >&2
      echo "and installing them needs root: sudo apt-get install -y wordnet-base wordnet-sense-index" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_wordnet.sh: no apt-get; install WordNet 3.0 and set WORDNET_SRC to its dict folder" >&2
    exit 1
  fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends wordnet-base wordnet-sense-index
fi

TMP="$DEST.partial.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
for pos in adj adv noun verb; do
  cp "$SRC/data.$pos" "$SRC/index.$pos" "$SRC/$pos.exc" "$TMP/"
done
cp "$SRC/index.sense" "$TMP/"
for f in cntlist.rev cntlist; do
  if [ -f "$SRC/$f" ]; then cp "$SRC/$f" "$TMP/"; fi
done
if [ -f /usr/share/doc/wordnet-base/copyright ]; then
  cp /usr/share/doc/wordnet-base/copyright "$TMP/LICENSE"
fi

# lexnames: "NN<TAB>name<TAB>syntactic category" (1 noun, 2 verb, 3 adjective, 4 adverb).
{
  n=0
  for entry in adj.all:3 adj.pert:3 adv.all:4 noun.Tops:1 noun.act:1 noun.animal:1 \
      noun.artifact:1 noun.attribute:1 noun.body:1 noun.cognition:1 noun.communication:1 \
      noun.event:1 noun.feeling:1 noun.food:1 noun.group:1 noun.location:1 noun.motive:1 \
      noun.object:1 noun.person:1 noun.phenomenon:1 noun.plant:1 noun.possession:1 \
      noun.process:1 noun.quantity:1 noun.relation:1 noun.shape:1 noun.state:1 \
      noun.substance:1 noun.time:1 verb.body:2 verb.change:2 verb.cognition:2 \
      verb.communication:2 verb.competition:2 verb.consumption:2 verb.contact:2 \
      verb.creation:2 verb.emotion:2 verb.motion:2 verb.perception:2 verb.possession:2 \
      verb.social:2 verb.stative:2 verb.weather:2 adj.ppl:3; do
    printf '%02d\t%s\t%s\n' "$n" "${entry%%:*}" "${entry##*:}"
    n=$((n + 1))
  done
} > "$TMP/lexnames"
if [ "$(wc -l < "$TMP/lexnames")" != 45 ]; then
  echo "install_wordnet.sh: lexnames should have 45 lines" >&2
  exit 1
fi

mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST"
mv "$TMP" "$DEST"
touch "$STAMP"
echo "WordNet 3.0 for nltk installed in $DEST"
