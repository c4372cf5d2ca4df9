#!/usr/bin/env bash
# Install the Debian documentation packages the verifier's "documents of other kinds" labels are
# made from (issue 36, item 3; `verirag label verifier --recipes doc_claims`).
#
# The labels hold references only (package, version, file, paragraph, perturbation) and read the
# text back from these installed files, so every machine that regenerates or resolves them needs
# the same packages. Licence texts (/usr/share/common-licenses, copyright files) are evaluation
# data and never read by the recipe.
#
# Usage: bash scripts/install_doc_corpus.sh      (idempotent; root or passwordless sudo is needed
# only when a package is missing). DOC_CORPUS_PACKAGES overrides the list.
set -euo pipefail
PACKAGES=${DOC_CORPUS_PACKAGES:-"debian-policy developers-reference maint-guide python3-doc manpages manpages-dev"}

missing=()
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_doc_corpus.sh: no apt-get; install the Debian packages ${missing[*]}" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install_doc_corpus.sh: installing ${missing[*]} needs root: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
if [ -f /etc/dpkg/dpkg.cfg.d/excludes ] && grep -q "path-exclude=/usr/share/doc" /etc/dpkg/dpkg.cfg.d/excludes; then
  echo "install_doc_corpus.sh: dpkg excludes /usr/share/doc here (/etc/dpkg/dpkg.cfg.d/excludes);" >&2
  echo "the documentation files would not be installed" >&2
  exit 1
fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
