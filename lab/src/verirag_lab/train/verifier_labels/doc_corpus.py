"""The documentation corpus of the `doc_claims` recipe: Debian documentation packages installed
here by scripts/install_doc_corpus.sh (`make doc-corpus`), read as paragraphs.

Each package is a list of file patterns (DOC_PACKAGES) under the corpus root ($VERIRAG_DOC_ROOT,
default "/"); where dpkg knows the package only its own files count. Files are Sphinx sources
(*.rst.txt), plain text (*.txt, *.txt.gz, Info manuals *.info*.gz) or man pages (roff, *.gz), turned into plain paragraphs
by rule (markup dropped, code blocks, headings, tables and lists left out) and kept when they read
as prose (12-120 words, mostly letters, a full stop). A paragraph's key is
"<package>:<path relative to the root>#<index among the file's kept paragraphs>", so the text is
regenerated from the installed file; each file's sha256 is its fingerprint, which a record keeps
and `resolve` checks.

Never read: licence texts and copyright notices. /usr/share/common-licenses is evaluation data
(issue 36), and a file whose path names a licence, copyright or COPYING is refused by the one
reader (`read_doc_file`) before it is opened; a paragraph that reads like a licence grant is
dropped.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from verirag.errors import InputError
from verirag_lab.train.verifier_labels.sources import Question, Source

DOC_PACKAGES: dict[str, tuple[str, ...]] = {
    "debian-policy": ("usr/share/doc/debian-policy/policy.html/_sources/*.rst.txt",),
    "developers-reference": ("usr/share/developers-reference/_sources/*.rst.txt",),
    "maint-guide": ("usr/share/doc/maint-guide/maint-guide.en.txt.gz",),
    "python3-doc": ("usr/share/doc/python3.*/html/_sources/**/*.rst.txt",),
    "manpages": ("usr/share/man/man[4-7]/*.gz",),
    "manpages-dev": ("usr/share/man/man2/*.gz", "usr/share/man/man3/*.gz"),
    # the final test's kind of document (heldout.FINAL_PACKAGES): the GNU Info manuals of whatever
    # packages installed them (coreutils, grep, sed, ...), never read for training or for a choice
    "info-manuals": ("usr/share/info/*.info.gz", "usr/share/info/*.info-[0-9]*.gz"),
}
# dpkg's name for the files of a package whose documentation another package ships
DPKG_NAMES = {"python3-doc": "python3.*-doc"}
LICENCE_PATH = re.compile(r"licen[cs]e|copyright|copying|common-licenses", re.IGNORECASE)
LICENCE_TEXT = re.compile(
    r"GNU (?:Lesser |Library )?General Public Licen[cs]e|WITHOUT ANY WARRANTY|Permission is hereby granted|"
    r"Licensed under|Creative Commons|Free Software Foundation|Permission is granted to",
    re.IGNORECASE,
)
MIN_WORDS, MAX_WORDS = 12, 120
INFO_FILE = re.compile(r"\.info(?:-\d+)?(?:\.gz)?$")


def doc_root() -> Path:
    return Path(os.environ.get("VERIRAG_DOC_ROOT") or "/")


def is_licence_path(path: str | Path) -> bool:
    return bool(LICENCE_PATH.search(str(path)))


def read_doc_file(path: Path) -> bytes:
    """The bytes of one documentation file; a licence or copyright file is refused unread."""
    if is_licence_path(path):
        raise InputError(f"{path} is a licence or copyright text: never read for training")
    return path.read_bytes()


def decode(path: Path, data: bytes) -> str:
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


# ---- markup -> paragraphs ---------------------------------------------------------------------
_RST_ROLE = re.compile(r":[\w:+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]*?)(?:\s*<[^>]*>)?`_{1,2}")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+.])\1{2,}\s*$")


def clean_rst(text: str) -> str:
    text = _RST_ROLE.sub(lambda m: m.group(1).lstrip("~!"), text)
    text = _RST_LINK.sub(r"\1", text)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\|(\w[\w-]*)\|", r"\1", text)
    return re.sub(r"\s+", " ", text.replace("::", ":")).strip()


def rst_paragraphs(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines or lines[0][:1].isspace() or any(_UNDERLINE.match(line) for line in lines):
            continue
        first = lines[0].lstrip()
        if first.startswith(("..", "|", "+", "=", "* ", "- ", "#", ">>>", ":")) or re.match(r"\d+\.\s|#\.\s", first):
            continue
        out.append(clean_rst(" ".join(lines)))
    return out


def text_paragraphs(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if not lines or lines[0].startswith(("*", "+", "-", "o ", "$", "#")) or re.match(r"\d+(\.\d+)*\.?\s", lines[0]):
            continue
        out.append(re.sub(r"\s+", " ", " ".join(lines)))
    return out


_ROFF_ESCAPES = [
    (re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)"), ""),
    (re.compile(r"\\\((?:em|en)"), "-"),
    (re.compile(r"\\\((?:aq|cq|oq)"), "'"),
    (re.compile(r"\\\((?:lq|rq|dq)"), '"'),
    (re.compile(r"\\\(.."), ""),
    (re.compile(r"\\\[[^\]]*\]"), ""),
    (re.compile(r"\\\*(?:\(..|\[[^\]]*\]|.)"), ""),
    (re.compile(r"\\[&|^%:]"), ""),
    (re.compile(r"\\-"), "-"),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\ "), " "),
    (re.compile(r"\\s[+-]?\d"), ""),
]
_FONT_MACROS = {"B", "I", "SM", "SB"}
_ALTERNATING = {"BR", "RB", "IR", "RI", "BI", "IB"}
_BREAKS = {"PP", "P", "LP", "TP", "IP", "HP", "sp", "br", "SH", "SS", "TH", "RS", "RE", "in", "ti", "TQ"}


def roff_unescape(text: str) -> str:
    for pattern, replacement in _ROFF_ESCAPES:
        text = pattern.sub(replacement, text)
    return text


def roff_args(rest: str) -> list[str]:
    try:
        return shlex.split(rest, posix=True)
    except ValueError:
        return rest.split()


def man_paragraphs(text: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    in_code = False
    section = ""

    def flush():
        if current:
            out.append(re.sub(r"\s+", " ", roff_unescape(" ".join(current))).strip())
            current.clear()

    for line in text.split("\n"):
        if line.startswith(('.\\"', "'\\\"", '\\"')):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].strip().split(None, 1)
            macro, rest = (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")
            if macro in ("nf", "EX"):
                flush()
                in_code = True
            elif macro in ("fi", "EE"):
                in_code = False
            elif in_code:
                continue
            elif macro in ("SH", "SS"):
                flush()
                section = " ".join(roff_args(rest)).upper()
            elif macro in _BREAKS:
                flush()
            elif macro in _FONT_MACROS and section not in ("SYNOPSIS", "COLOPHON", "COPYRIGHT", "LICENSE"):
                current.append(" ".join(roff_args(rest)))
            elif macro in _ALTERNATING and section not in ("SYNOPSIS", "COLOPHON", "COPYRIGHT", "LICENSE"):
                current.append("".join(roff_args(rest)))
            continue
        if in_code or section in ("SYNOPSIS", "COLOPHON", "COPYRIGHT", "LICENSE"):
            continue
        if not line.strip():
            flush()
            continue
        current.append(line)
    flush()
    return out


def is_prose(paragraph: str) -> bool:
    words = paragraph.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or "." not in paragraph or LICENCE_TEXT.search(paragraph):
        return False
    letters = sum(c.isalpha() or c.isspace() for c in paragraph)
    return letters >= 0.8 * len(paragraph)


def paragraphs_of(path: Path, text: str) -> list[str]:
    name = path.name
    if name.endswith(".rst.txt"):
        found = rst_paragraphs(text)
    elif name.endswith((".txt", ".txt.gz")):
        found = text_paragraphs(text)
    elif INFO_FILE.search(name):
        found = text_paragraphs(text.replace("\x1f", "\n"))  # \x1f: Info's node separator
    else:
        if text.lstrip().startswith(".so "):  # a man page that only points to another
            return []
        found = man_paragraphs(text)
    return [p for p in found if is_prose(p)]


# ---- the corpus -------------------------------------------------------------------------------
@cache
def package_version(package: str) -> str:
    name = DPKG_NAMES.get(package, package)
    try:
        run = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}\\n", name], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    versions = sorted(v for v in run.stdout.split() if v)
    return versions[-1] if run.returncode == 0 and versions else "unknown"


@cache
def package_files(package: str) -> frozenset[str] | None:
    """The files dpkg lists for `package` (None when dpkg does not know it: every match counts)."""
    name = DPKG_NAMES.get(package, package)
    try:
        names = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package}\\n", name], capture_output=True, text=True, timeout=30, check=False
        ).stdout.split()
        files = set()
        for n in names:
            listed = subprocess.run(["dpkg-query", "-L", n], capture_output=True, text=True, timeout=60, check=False)
            files.update(line.strip() for line in listed.stdout.splitlines())
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(files) or None


def package_paths(root: Path, package: str) -> list[str]:
    """Paths (relative to root, sorted) of `package`'s documentation files, licences left out."""
    owned = package_files(package) if root == Path("/") else None
    found = set()
    for pattern in DOC_PACKAGES[package]:
        for p in root.glob(pattern):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and not is_licence_path(rel) and (owned is None or "/" + rel in owned):
                found.add(rel)
    return sorted(found)


@dataclass
class DocSource(Source):
    """The corpus as a labelling `Source`: one question per paragraph (module doc)."""

    root: Path = field(default_factory=doc_root)
    shas: dict[str, str] = field(default_factory=dict)  # "<package>:<path>" -> sha256[:16]
    versions: dict[str, str] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)  # "<package>:<path>" -> paragraph keys


def doc_question(package: str, path: str) -> str:
    stem = re.sub(r"(\.rst)?\.txt(\.gz)?$|\.gz$", "", path.rsplit("/_sources/", 1)[-1].rsplit("/man/", 1)[-1])
    return f"What does the {package} documentation say in {stem}?"


def load_doc_source(root: str | Path | None = None, packages: tuple[str, ...] | None = None) -> DocSource:
    """Every installed package's paragraphs; InputError when none of the packages is installed."""
    root = Path(root) if root is not None else doc_root()
    source = DocSource("docs", {}, {}, root=root)
    for package in packages or tuple(DOC_PACKAGES):
        paths = package_paths(root, package)
        if paths:
            source.versions[package] = package_version(package)
        for rel in paths:
            data = read_doc_file(root / rel)
            doc = f"{package}:{rel}"
            source.shas[doc] = hashlib.sha256(data).hexdigest()[:16]
            question = doc_question(package, rel)
            keys = []
            for i, paragraph in enumerate(paragraphs_of(root / rel, decode(root / rel, data))):
                key = f"{doc}#{i}"
                source.passages[key] = (question.split(" say in ", 1)[1].rstrip("?"), paragraph)
                source.questions[key] = Question("docs", key, question, (), (key,))
                keys.append(key)
            source.files[doc] = keys
    if not source.passages:
        raise InputError(
            f"no documentation installed under {root} ({', '.join(DOC_PACKAGES)}): run "
            "scripts/install_doc_corpus.sh (make doc-corpus)"
        )
    return source


def file_sha(source: DocSource, package: str, path: str) -> str | None:
    return source.shas.get(f"{package}:{path}")
