"""Help and docs say what the program does (issue 30, item 4).

Every metric with a shipped default model runs without a model option, so neither `dialeval
metrics` nor `score --help` (nor `help(dialeval.score)`) may say it "needs" or "requires" one:
those texts are written from the registry's declarations (`MetricSpec.default_model`,
`model_option`), which this checks. Doc claims that name something the registry or the shipped
models declare (tokenizers, output fields, the default composition and LM layout) are checked
against those declarations too.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from conftest import REPO
from dialeval.cli.main import main
from dialeval.metrics.registry import REGISTRY, model_option_note, shipped_note

NEEDS = re.compile(r"\b(needs?|requires?|required)\b", re.I)

SHIPPED = [spec for spec in REGISTRY.values() if spec.default_model and spec.model_option]


def run(argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:    # --help
            code = exc.code
    assert code == 0, argv
    return out.getvalue()


def test_some_metrics_ship_default_models():
    assert {"adem", "c_adem", "r_adem", "am", "amfm", "mme_fm", "compose", "lm_coherence"} <= \
        {s.name for s in SHIPPED}


@pytest.fixture(scope="module")
def metrics_listing() -> dict[str, str]:
    """metric -> its description line in `dialeval metrics`."""
    lines = run(["metrics"]).splitlines()
    out = {}
    for line in lines:
        name = line.split(" ", 1)[0]
        if name in REGISTRY:
            out[name] = line
    return out


@pytest.fixture(scope="module")
def score_help() -> dict[str, str]:
    """flag -> its help text in `dialeval score --help`, wrapped lines joined."""
    text = run(["score", "--help"])
    helps: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^  (--[a-z0-9-]+)(.*)$", line)
        if m:
            current = m.group(1)
            helps[current] = m.group(2)
        elif current and line.startswith("    "):
            helps[current] += " " + line.strip()
        else:
            current = None
    return {k: " ".join(v.split()) for k, v in helps.items()}


@pytest.mark.parametrize("spec", SHIPPED, ids=[s.name for s in SHIPPED])
def test_the_metrics_listing_names_the_shipped_default(spec, metrics_listing):
    line = metrics_listing[spec.name]
    flag = "--" + spec.model_option.replace("_", "-")
    assert not re.search(rf"\b(needs?|requires?|required)\b[^;]*{re.escape(flag)}", line), line
    assert f"{flag} {shipped_note(spec.default_model)}" in line


@pytest.mark.parametrize("spec", SHIPPED, ids=[s.name for s in SHIPPED])
def test_score_help_names_the_shipped_default(spec, score_help):
    flag = "--" + spec.model_option.replace("_", "-")
    text = score_help[flag]
    assert not NEEDS.search(text), f"{flag}: {text}"
    assert "(default: the shipped " in text and spec.default_model in text, f"{flag}: {text}"
    assert model_option_note(spec.model_option) in text


def test_the_generated_score_docstring_names_the_shipped_defaults():
    from dialeval.scoring_doc import metric_options_section

    section = " ".join(metric_options_section().split())
    for option in {s.model_option for s in SHIPPED}:
        text = section.split(f"{option}: ", 1)[1]
        note = model_option_note(option)
        assert note in text, option
        assert not NEEDS.search(text.split(note, 1)[0]), text[:300]


def test_no_doc_says_a_shipped_model_option_is_needed():
    flags = sorted({"--" + s.model_option.replace("_", "-") for s in SHIPPED})
    pattern = re.compile(r"(needs?|requires?|required)\W+(\w+\W+){0,3}(" + "|".join(flags) + r")\b"
                         r"|(" + "|".join(flags) + r")\b`?\s*\(required\)")
    pages = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in pages
             for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found


# --------------------------------------------------------------------------- doc claims

USAGE = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")


def test_usage_lists_every_tokenizer():
    from dialeval.text.tokenizers import list_tokenizers

    missing = [name for name in list_tokenizers() if f"`{name}`" not in USAGE]
    assert not missing, missing
    # and the command line's synopsis offers each of them
    synopsis = re.search(r"\[--tokenize ([^\]]+)\]", USAGE).group(1).split("|")
    assert synopsis == list(list_tokenizers())


def test_usage_lists_every_output_field(tmp_path):
    """The keys `dialeval score -o --with-stats` writes for a sample with every part."""
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "1", "system": "s", "context": ["hi"], "response": "a b",
                               "references": ["a b"], "ratings": {"overall": [4]},
                               "meta": {"dialogue_id": "d1"}}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run(["score", str(src), "--metrics", "bleu2,rouge_l", "--with-stats", "-o", str(out)])
    keys = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    fields = USAGE.split("`OUT.jsonl` (`-o`) holds", 1)[1].split("Stdout is", 1)[0]
    missing = [k for k in keys if f"`{k}`" not in fields]
    assert not missing, missing


def _shipped_config(name: str, monkeypatch) -> dict:
    from dialeval.models.defaults import default_model_dir

    monkeypatch.delenv("DIALEVAL_MODELS_DIR", raising=False)   # conftest hides the defaults
    folder = default_model_dir(name)
    if folder is None:
        pytest.skip(f"the shipped default {name!r} is not installed (install.sh installs it)")
    with open(f"{folder}/config.json", encoding="utf-8") as handle:
        return json.load(handle)


def test_compose_docs_describe_the_shipped_rule(monkeypatch):
    config = _shipped_config("compose", monkeypatch)["params"]
    text = (REPO / "docs" / "compose.md").read_text(encoding="utf-8")
    default = " ".join(text.split("**Default model.**", 1)[1].split("\n\n", 1)[0].split())
    assert f"--method {config['method']}" in default
    if config.get("positive"):
        assert "coefficients >= 0" in default and "--positive" in default
    assert "CRS weights" not in default


def test_lm_docs_describe_the_shipped_layout(monkeypatch):
    layout = _shipped_config("lm", monkeypatch)["layout"]
    text = " ".join((REPO / "docs" / "lm.md").read_text(encoding="utf-8").split())
    assert f"The default `lm` adapter runs the `{layout}` layout" in text
