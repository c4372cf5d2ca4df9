"""The ik_llama.cpp engine of the GGUF backend (issue 48, item 5): the same model, another build.

Exactness of prefix reuse on it is checked with the other engine's in test_llm_prefix_reuse.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from verirag.errors import BackendError, InputError
from verirag.settings import Settings


def test_the_engine_is_read_from_the_environment_and_checked():
    assert Settings.from_env({}).llama_engine == "llama_cpp"
    assert Settings.from_env({"VERIRAG_LLAMA_ENGINE": "IK"}).llama_engine == "ik"
    with pytest.raises(InputError, match="VERIRAG_LLAMA_ENGINE must be one of llama_cpp, ik"):
        Settings.from_env({"VERIRAG_LLAMA_ENGINE": "vllm"})


def test_the_build_is_found_by_the_scripts_own_tag():
    import subprocess
    from pathlib import Path

    from verirag.llm.ik_build import build_tag

    script = Path(__file__).resolve().parents[1] / "scripts" / "build_ik_llama_cpp.sh"
    lines = [x for x in script.read_text().splitlines() if x.startswith(("VERSION=", "CPU_FLAGS=", "TAG="))]
    assert len(lines) == 3
    tag = subprocess.run(["bash", "-c", "\n".join([*lines, 'echo "$TAG"'])], capture_output=True, text=True)
    assert tag.stdout.strip() == build_tag() and len(build_tag()) == 12
    assert build_tag(flags="flags : avx2") != build_tag(flags="flags : avx2 avx512f")  # per CPU


def test_the_package_is_pointed_at_this_cpus_build_unless_told_otherwise(tmp_path, monkeypatch):
    import os

    from verirag.llm import ik_build

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(ik_build.LIB_ENV, "")  # recorded, so what use_native_library sets is undone after
    monkeypatch.delenv(ik_build.LIB_ENV)
    assert ik_build.native_library() is None and ik_build.use_native_library() is None
    assert ik_build.LIB_ENV not in os.environ  # no build here: the wheel's own library loads
    lib = ik_build.build_dir() / "build" / "vendor" / "ik_llama.cpp" / "src" / "libllama.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    assert ik_build.native_library() is None  # not finished: the script stamps a build when it is
    (ik_build.build_dir() / "built").touch()
    assert ik_build.use_native_library() == lib and os.environ[ik_build.LIB_ENV] == str(lib)
    monkeypatch.setenv(ik_build.LIB_ENV, "/elsewhere/libllama.so")
    assert str(ik_build.use_native_library()) == "/elsewhere/libllama.so"  # the environment's choice stands


def test_an_unknown_engine_is_named(smollm_path):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    with pytest.raises(InputError, match="unknown llama.cpp engine 'gpu'"):
        LlamaCppLLM(smollm_path, engine="gpu")


def test_without_the_wheel_the_error_says_how_to_install_it(smollm_path, monkeypatch):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    monkeypatch.setitem(sys.modules, "ik_llama_cpp", None)  # import fails as if not installed
    with pytest.raises(BackendError, match=r"verirag\[ik\]"):
        LlamaCppLLM(smollm_path, engine="ik")


@pytest.fixture(scope="module")
def ik_llm(smollm_path):
    pytest.importorskip("ik_llama_cpp", reason="the ik engine needs the ik extra (pip install 'verirag[ik]')")
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, n_ctx=1024, engine="ik")
    yield llm
    llm.close()


PROMPT = "The harbour of the old town was built in stone, and every morning the fishing boats"


def test_it_generates_what_it_scores(ik_llm):
    g = ik_llm.generate(PROMPT, max_tokens=12, temperature=0.0, logprobs=True)
    assert g.text.strip() and g.completion_tokens == len(g.token_ids) > 0
    # greedy: each generated token is the arg-max of the logits it was read from, and scoring
    # the generated text gives back the logprobs generation reported
    scored = ik_llm.score(PROMPT, g.text)
    assert [t.token for t in scored.tokens] == [t.token for t in g.tokens]
    assert np.allclose([t.logprob for t in scored.tokens], [t.logprob for t in g.tokens], atol=1e-3)
    top = ik_llm.next_token_logprobs(PROMPT, top_k=3)
    assert max(top, key=top.get) == g.tokens[0].token


def test_it_reads_the_model_s_chat_template_and_counts_like_the_default_engine(ik_llm, smollm_path):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    chat = [{"role": "user", "content": "Name a colour."}]
    default = LlamaCppLLM(smollm_path, n_ctx=1024)
    try:
        assert ik_llm.chat_template and ik_llm.chat_template == default.chat_template
        assert ik_llm.render(chat) == default.render(chat)
        assert ik_llm._tokenize_prompt(chat) == default._tokenize_prompt(chat)
        assert ik_llm.count_tokens(PROMPT) == default.count_tokens(PROMPT)
        # another build's kernels: a different fingerprint, so no cache mixes their answers
        assert ik_llm.fingerprint == default.fingerprint + "|engine=ik"
    finally:
        default.close()


def test_it_offers_no_hidden_states(ik_llm):
    from verirag.llm.base import HIDDEN_STATE

    assert HIDDEN_STATE not in ik_llm.capabilities
    with pytest.raises(BackendError, match="not offered by the ik engine"):
        ik_llm.hidden_state("A sentence.")


def test_a_prompt_over_the_window_is_refused(ik_llm):
    with pytest.raises(InputError, match="does not fit the context window"):
        ik_llm.generate("word " * 2000, max_tokens=4)


def test_load_llm_loads_the_engine_the_environment_names(ik_llm, monkeypatch):
    from verirag.llm.factory import load_llm

    default = load_llm("smollm2-135m", cache=False)
    monkeypatch.setenv("VERIRAG_LLAMA_ENGINE", "ik")
    on_ik = load_llm("smollm2-135m", cache=False)
    assert on_ik is not default and on_ik.fingerprint.endswith("|engine=ik")
    assert not default.fingerprint.endswith("|engine=ik")


def test_build_info_names_each_engine_s_own_library():
    pytest.importorskip("ik_llama_cpp", reason="the ik engine needs the ik extra (pip install 'verirag[ik]')")
    from pathlib import Path

    from verirag.llm.llama_engine import build_info

    default, ik = build_info("llama_cpp"), build_info("ik")
    assert default["engine"] == "llama_cpp" and ik["engine"] == "ik"
    assert Path(default["library"]).is_file() and Path(ik["library"]).is_file()
    assert default["library"] != ik["library"]  # two builds, each recorded as what it is
    assert default["system_info"] and ik["system_info"]  # the kernels each was built with
